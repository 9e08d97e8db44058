package shard

import (
	"slices"
	"testing"
)

// TestLendDefersInOrder: while a shard is lent, Exec defers every message
// (none runs), ExecBorrowed runs; Return runs the deferred ones in the
// order they came, and Exec runs at once again after it.
func TestLendDefersInOrder(t *testing.T) {
	s := New(0, 1)
	var ran []int
	msg := func(i int) Runnable { return Func(func(*Shard) { ran = append(ran, i) }) }
	if !s.Lendable([]KeyLock{{Key: "k", Excl: true}}) {
		t.Fatal("a fresh shard is not lendable")
	}
	s.Lend()
	if !s.Lent() || s.Lendable(nil) {
		t.Fatal("lent shard: Lent false or Lendable true")
	}
	s.Exec(msg(1))
	s.Exec(msg(2))
	if len(ran) != 0 {
		t.Fatalf("ran while lent: %v", ran)
	}
	s.ExecBorrowed(msg(0))
	s.Exec(msg(3))
	if !slices.Equal(ran, []int{0}) {
		t.Fatalf("ExecBorrowed while lent: ran %v, want [0]", ran)
	}
	s.Return()
	s.Exec(msg(4))
	if want := []int{0, 1, 2, 3, 4}; !slices.Equal(ran, want) {
		t.Fatalf("after Return: ran %v, want %v", ran, want)
	}
	if s.Lent() {
		t.Fatal("still lent after Return")
	}
}

// TestLendableNeedsFreeKeys: a shard whose key is locked lends to a run
// with other keys, not to one with that key.
func TestLendableNeedsFreeKeys(t *testing.T) {
	s := New(0, 1)
	s.Acquire([]KeyLock{{Key: "a", Excl: true}}, false)
	if s.Lendable([]KeyLock{{Key: "a"}}) {
		t.Fatal("lendable to a run reading a key locked exclusively")
	}
	if !s.Lendable([]KeyLock{{Key: "b", Excl: true}}) {
		t.Fatal("not lendable to a run on a free key")
	}
}

// TestRecallOncePerLend: a lent shard asks its borrower back (the recall
// AttachRecall set) on the first message deferred, and on Recall, once a
// lend; a shard not lent never does, and Lend arms it again.
func TestRecallOncePerLend(t *testing.T) {
	s := New(0, 1)
	recalls := 0
	s.AttachRecall(func() { recalls++ })
	nop := Func(func(*Shard) {})
	s.Recall()
	s.Exec(nop)
	if recalls != 0 {
		t.Fatalf("%d recalls of a shard not lent", recalls)
	}
	s.Lend()
	s.ExecBorrowed(nop)
	if recalls != 0 {
		t.Fatalf("%d recalls from the borrower's own run", recalls)
	}
	s.Exec(nop)
	s.Exec(nop)
	s.Recall()
	if recalls != 1 {
		t.Fatalf("%d recalls for one lend, want 1", recalls)
	}
	s.Return()
	s.Lend()
	s.Recall()
	s.Exec(nop)
	if recalls != 2 {
		t.Fatalf("%d recalls after a second lend, want 2", recalls)
	}
}
