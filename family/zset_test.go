package family

import (
	"fmt"
	"testing"
)

// TestZSetPop drives the pop entry point the blocking commands use.
func TestZSetPop(t *testing.T) {
	x := streamExec() // a bare shard
	x.Args = benchArgs("ZADD", "z", "1", "a", "2", "b", "3", "c")
	cmdZAdd(x)
	x.Args = benchArgs("SET", "s", "v")
	cmdSet(x)
	var got [][]ZItem
	got = append(got, zsetPop(x.DB, []byte("z"), true, 1))
	got = append(got, zsetPop(x.DB, []byte("z"), false, 5))
	got = append(got, zsetPop(x.DB, []byte("z"), false, 1))
	got = append(got, zsetPop(x.DB, []byte("s"), false, 1))
	want := "[[{c 3}] [{a 1} {b 2}] [] []]"
	if fmt.Sprint(got) != want {
		t.Fatalf("pops = %v, want %s", got, want)
	}
	if it, _ := x.DB.FindMeta([]byte("z")); it.Valid() {
		t.Fatalf("emptied key still exists")
	}
}
