package shard

import (
	"fmt"
	"testing"
)

// A replica loads a key again (non-PIT sends a key twice; a journal entry
// may create it before its baseline) while its old value is logically
// expired: hidden from readers, still in the table. Load must replace
// value and TTL in place, and leave every other key alone.
func TestLoadOverHiddenExpiredKey(t *testing.T) {
	s := New(0, 1)
	s.ReplicaMode = true
	db := s.DBs[0]
	for i := 0; i < 2000; i++ {
		db.Load([]byte(fmt.Sprintf("k%d", i)), NewString([]byte("v")), 0)
	}
	past := s.Now() - 1
	db.Load([]byte("short"), NewString([]byte("old")), past)
	if it, _ := db.Find([]byte("short")); it.Valid() {
		t.Fatal("a key past its TTL is visible on a replica")
	}
	for _, at := range []int64{past, 0, s.Now() + 60_000} {
		db.Load([]byte("short"), NewString([]byte("new")), at)
		for i := 0; i < 2000; i++ {
			if it, _ := db.Find([]byte(fmt.Sprintf("k%d", i))); !it.Valid() {
				t.Fatalf("Load of short (expiry %d) over its hidden old value hid k%d", at, i)
			}
		}
		it := db.Table.Find("short")
		if !it.Valid() || string(db.Table.Value(it).Str()) != "new" {
			t.Fatalf("Load (expiry %d) did not replace the hidden value", at)
		}
		got, has := db.ExpireAt(it)
		if want := at != 0; has != want || got != at && want {
			t.Fatalf("Load (expiry %d): the key's expiry is %d (has %v)", at, got, has)
		}
	}
	if db.Len() != 2001 || db.Expire.Len() != 1 {
		t.Fatalf("%d keys, %d expiries; want 2001, 1", db.Len(), db.Expire.Len())
	}
}
