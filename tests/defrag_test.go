package tests

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// packedInfo reads INFO memory's packed_strings_bytes and
// packed_strings_live_bytes (a value holds its length rounded up to 8:
// 104 bytes for the tests' 100).
func packedInfo(t *testing.T, info string) (used, live int) {
	t.Helper()
	for _, line := range strings.Split(info, "\r\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		n, _ := strconv.Atoi(v)
		switch k {
		case "packed_strings_bytes":
			used = n
		case "packed_strings_live_bytes":
			live = n
		}
	}
	return used, live
}

// Small string values live packed in chunks (shard/strs.go). Deleting
// most keys leaves the chunks mostly dead; the background pass must give
// the memory back (moving the survivors) without changing any value.
func TestPackedStringsDefragment(t *testing.T) {
	t.Parallel()
	srv := StartServer(t, "--shards", "2")
	ctx := context.Background()
	c := srv.Client(t, 2)
	const n = 200_000
	if err := c.Do(ctx, "DEBUG", "POPULATE", n, "key", 100).Err(); err != nil {
		t.Fatalf("DEBUG POPULATE: %v", err)
	}
	used, live := packedInfo(t, c.Info(ctx, "memory").Val())
	if live != n*104 || used < live || used > live*11/10+2*64<<10 {
		t.Fatalf("after populating %d keys of 100 bytes: packed %d bytes, %d live", n, used, live)
	}
	pipe := c.Pipeline()
	for i := 0; i < n; i++ {
		if i%5 != 0 {
			pipe.Del(ctx, fmt.Sprintf("key:%d", i))
		}
		if i%1000 == 999 {
			if _, err := pipe.Exec(ctx); err != nil {
				t.Fatalf("DEL: %v", err)
			}
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatalf("DEL: %v", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		used, live = packedInfo(t, c.Info(ctx, "memory").Val())
		if live != n/5*104 {
			t.Fatalf("after deleting 80%%: %d live bytes, want %d", live, n/5*104)
		}
		if used <= live*12/10+4*64<<10 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("30 s after deleting 80%% of the keys the chunks still hold %d bytes for %d live", used, live)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for i := 0; i < n; i += 5 {
		pipe.Get(ctx, fmt.Sprintf("key:%d", i))
	}
	cmds, err := pipe.Exec(ctx)
	if err != nil {
		t.Fatalf("GET: %v", err)
	}
	for j, cmd := range cmds {
		want := fmt.Sprintf("value:%d", j*5)
		want += strings.Repeat("\x00", 100-len(want))
		if got := cmd.(interface{ Val() string }).Val(); got != want {
			t.Fatalf("key:%d = %q after the defragmentation, want %q", j*5, got, want)
		}
	}
}
