package main

import (
	"bufio"
	"errors"
	"fmt"
	"github.com/cespare/xxhash/v2"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/redcon"
)

// runRaw is the -raw client: each connection writes P transactions at a
// time as pre-encoded RESP and reads their replies with a minimal parser,
// so that a client core drives a server core well past its limit. It
// returns the transactions completed in dur.
func runRaw(addr, test string, clients, pipeline, keys int, dur time.Duration) (int64, error) {
	var ops atomic.Int64
	var firstErr error
	var errOnce sync.Once
	deadline := time.Now().Add(dur)
	var wg sync.WaitGroup
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if err := rawClient(addr, test, i, pipeline, keys, deadline, &ops); err != nil {
				errOnce.Do(func() { firstErr = err })
			}
		}(i)
	}
	wg.Wait()
	if firstErr != nil && ops.Load() == 0 {
		return 0, firstErr
	}
	return ops.Load(), nil
}

func rawClient(addr, test string, id, pipeline, keys int, deadline time.Time, ops *atomic.Int64) error {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer nc.Close()
	r := bufio.NewReaderSize(nc, 64<<10)
	var sha string
	{
		req := appendCommand(nil, "SCRIPT", "LOAD", incr2)
		if _, err := nc.Write(req); err != nil {
			return err
		}
		line, err := r.ReadSlice('\n')
		if err != nil {
			return err
		}
		if line[0] != '$' {
			return fmt.Errorf("SCRIPT LOAD: %q", line)
		}
		b, err := r.ReadSlice('\n')
		if err != nil {
			return err
		}
		sha = string(b[:len(b)-2])
	}
	rng := rand.New(rand.NewPCG(uint64(id), 7))
	var req []byte
	var k1, k2 []byte
	for time.Now().Before(deadline) {
		req = req[:0]
		for j := 0; j < pipeline; j++ {
			k1 = strconv.AppendInt(append(k1[:0], test+":"...), int64(rng.IntN(keys)), 10)
			k2 = strconv.AppendInt(append(k2[:0], test+":"...), int64(rng.IntN(keys)), 10)
			switch place {
			case "cross2":
				// dfly's shard of a key without a hash tag: xxhash % shards.
				for xxhash.Sum64(k1)%2 == xxhash.Sum64(k2)%2 {
					k2 = strconv.AppendInt(append(k2[:0], test+":"...), int64(rng.IntN(keys)), 10)
				}
			case "same": // one hash tag: one shard
				k1 = strconv.AppendInt(append(k1[:0], test+":{"...), int64(rng.IntN(keys)), 10)
				k1 = append(k1, "}a"...)
				k2 = append(append(k2[:0], k1[:len(k1)-1]...), 'b')
			}
			if test == "multi" {
				req = append(req, "*1\r\n$5\r\nMULTI\r\n"...)
				req = appendCommand(req, "SET", string(k1), "v")
				req = appendCommand(req, "SET", string(k2), "v")
				req = append(req, "*1\r\n$4\r\nEXEC\r\n"...)
			} else {
				req = appendCommand(req, "EVALSHA", sha, "2", string(k1), string(k2))
			}
		}
		if _, err := nc.Write(req); err != nil {
			return err
		}
		perTx := 1
		if test == "multi" {
			perTx = 4 // OK, QUEUED, QUEUED, the EXEC array
		}
		for j := 0; j < pipeline*perTx; j++ {
			if err := skipReply(r); err != nil {
				return err
			}
		}
		ops.Add(int64(pipeline))
	}
	return nil
}

func appendCommand(b []byte, args ...string) []byte {
	b = redcon.AppendArray(b, len(args))
	for _, a := range args {
		b = redcon.AppendBulkString(b, a)
	}
	return b
}

// skipReply reads one RESP2 reply; an error reply is an error.
func skipReply(r *bufio.Reader) error {
	line, err := r.ReadSlice('\n')
	if err != nil {
		return err
	}
	if len(line) < 3 {
		return errors.New("short reply line")
	}
	switch line[0] {
	case '+', ':':
		return nil
	case '-':
		return fmt.Errorf("server: %s", line[1:len(line)-2])
	case '$':
		n, err := strconv.Atoi(string(line[1 : len(line)-2]))
		if err != nil {
			return err
		}
		if n >= 0 {
			_, err = r.Discard(n + 2)
		}
		return err
	case '*':
		n, err := strconv.Atoi(string(line[1 : len(line)-2]))
		if err != nil {
			return err
		}
		for ; n > 0; n-- {
			if err := skipReply(r); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("unexpected reply %q", line)
}

// place is the -place flag: where a transaction's two keys live.
var place string
