package tx

import (
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dfly/dfly/shard"
)

func startShards(t *testing.T, n int) []*shard.Shard {
	shards := make([]*shard.Shard, n)
	for i := range shards {
		shards[i] = shard.New(i, 1)
		shards[i].Start()
	}
	t.Cleanup(func() {
		for _, s := range shards {
			s.Stop()
		}
	})
	return shards
}

func readInt(db *shard.DB, key string) int {
	_, v := db.Find([]byte(key))
	if v == nil {
		return 0
	}
	n, _ := strconv.Atoi(string(v.Str()))
	return n
}

func writeInt(db *shard.DB, key string, n int) {
	db.Set([]byte(key), shard.NewString([]byte(strconv.Itoa(n))), false)
}

// TestBankInvariant moves amounts between accounts on random shards while
// readers sum every account under shared locks: the sum never changes, and
// the whole run finishes (no deadlock) despite transactions that lock
// overlapping keys on several shards in every order of declaration.
func TestBankInvariant(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	const nShards, nAccounts, start = 3, 12, 100
	shards := startShards(t, nShards)
	owner := func(acct int) int { return acct % nShards }
	key := func(acct int) string { return "acct:" + strconv.Itoa(acct) }
	for a := 0; a < nAccounts; a++ {
		a := a
		done := make(chan struct{})
		shards[owner(a)].Send(shard.Func(func(s *shard.Shard) { writeInt(s.DBs[0], key(a), start); close(done) }))
		<-done
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	var transfers, sums atomic.Int64
	for w := 0; w < 6; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			for !stop.Load() {
				from, to := rng.IntN(nAccounts), rng.IntN(nAccounts)
				if from == to {
					continue
				}
				amount := rng.IntN(10)
				t := New(shards)
				t.Add(owner(to), 0, key(to), true)
				t.Add(owner(from), 0, key(from), true)
				t.Lock()
				var bal int
				t.Run(owner(from), func(s *shard.Shard) { bal = readInt(s.DBs[0], key(from)) })
				if bal < amount {
					t.Finish(nil)
					continue
				}
				t.Run(owner(from), func(s *shard.Shard) { writeInt(s.DBs[0], key(from), bal-amount) })
				t.Run(owner(to), func(s *shard.Shard) {
					db := s.DBs[0]
					writeInt(db, key(to), readInt(db, key(to))+amount)
				})
				t.Finish(nil)
				transfers.Add(1)
			}
		}(w)
	}
	errs := make(chan string, 10)
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				t := New(shards)
				for a := nAccounts - 1; a >= 0; a-- {
					t.Add(owner(a), 0, key(a), false)
				}
				t.Lock()
				var parts [nShards]int
				t.Finish(func(s *shard.Shard) {
					for a := 0; a < nAccounts; a++ {
						if owner(a) == s.ID {
							parts[s.ID] += readInt(s.DBs[0], key(a))
						}
					}
				})
				sum := 0
				for _, p := range parts {
					sum += p
				}
				if sum != nAccounts*start {
					select {
					case errs <- "sum " + strconv.Itoa(sum):
					default:
					}
				}
				sums.Add(1)
			}
		}()
	}
	time.Sleep(1500 * time.Millisecond)
	stop.Store(true)
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(20 * time.Second):
		t.Fatalf("seed %d: transactions did not finish: deadlock", seed)
	}
	close(errs)
	for e := range errs {
		t.Fatalf("seed %d: a reader saw a partial transfer: %s, want %d", seed, e, nAccounts*start)
	}
	if transfers.Load() == 0 || sums.Load() == 0 {
		t.Fatalf("no progress: %d transfers, %d sums", transfers.Load(), sums.Load())
	}
	t.Logf("%d transfers, %d consistent sums", transfers.Load(), sums.Load())
}
