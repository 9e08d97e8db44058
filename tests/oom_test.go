package tests

import "testing"

// TestExecAbortsWhenOverMaxmemory: a transaction queued while under
// maxmemory whose EXEC comes once the server is over it is discarded with
// Redis's "EXECABORT Transaction discarded because of: OOM ..." when it
// holds a command that may grow memory, and runs when it only reads. The
// limit moves from another connection between the queueing and EXEC.
func TestExecAbortsWhenOverMaxmemory(t *testing.T) {
	srv := StartServer(t)
	c, admin := srv.Raw(t), srv.Raw(t)
	defer admin.Do("CONFIG", "SET", "maxmemory", "0")

	mustOK := func(r Reply) {
		t.Helper()
		if r.Str != "OK" && r.Str != "QUEUED" {
			t.Fatalf("got %+v", r)
		}
	}
	mustOK(c.Do("SET", "k", "v"))
	mustOK(c.Do("MULTI"))
	mustOK(c.Do("SET", "k", "w"))
	mustOK(c.Do("GET", "k"))
	mustOK(admin.Do("CONFIG", "SET", "maxmemory", "1"))
	want := "EXECABORT Transaction discarded because of: OOM command not allowed when used memory > 'maxmemory'."
	if r := c.Do("EXEC"); r.Str != want {
		t.Fatalf("EXEC of a write over maxmemory: %+v, want %q", r, want)
	}
	// Discarded: no MULTI is left open, and nothing ran.
	if r := c.Do("EXEC"); r.Str != "ERR EXEC without MULTI" {
		t.Fatalf("second EXEC: %+v", r)
	}
	if r := c.Do("GET", "k"); r.Str != "v" {
		t.Fatalf("GET k = %+v, want the value from before the transaction", r)
	}

	// A transaction of reads queued before the limit runs.
	mustOK(admin.Do("CONFIG", "SET", "maxmemory", "0"))
	mustOK(c.Do("MULTI"))
	mustOK(c.Do("GET", "k"))
	mustOK(admin.Do("CONFIG", "SET", "maxmemory", "1"))
	if r := c.Do("EXEC"); len(r.Elems) != 1 || r.Elems[0].Str != "v" {
		t.Fatalf("EXEC of a read over maxmemory: %+v", r)
	}
}
