package tests

// The replication checker's second mode: the differential against Redis
// itself. One client's stream of the checker's commands (every type,
// multi-key and blocking commands, MULTI/EXEC, scripts, SWAPDB) goes to a
// dfly of 2 or 3 shards and to a redis-server, step by step, and the two
// datasets must stay equal: every key's type and content, whether it has
// a TTL, and each database's DBSIZE, compared every rcCompareEvery steps
// and at the end. The stream is deterministic: no SPOP, explicit stream
// IDs, exact trimming only, and only TTLs that outlive the run (a short
// one would expire at a different command on each server), plus
// EXPIREAT in the past. Replies are not compared (TestDifferential does);
// each is kept in the history a mismatch shows.

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

const (
	rcCompareEvery = 100 // steps between dataset comparisons
	rcMaxMismatch  = 3   // reports before the run stops
)

func TestReplCheckRedis(t *testing.T) {
	t.Parallel()
	if IsRedis() {
		t.Skip("compares dfly with redis-server; it runs with the dfly target only")
	}
	base := newSeed(t)
	for i := 0; i < replCheckRunCount(2); i++ {
		seed := base + uint64(i)
		shards := 2 + int(seed%2)
		t.Run(fmt.Sprintf("shards%d-seed%d", shards, seed), func(t *testing.T) {
			t.Parallel()
			replCheckRedis(t, seed, shards)
		})
	}
}

// rcDiffEvent is one command of the differential stream, with both replies.
type rcDiffEvent struct {
	step        int
	db          string
	args        []string
	redis, dfly string
}

func replCheckRedis(t *testing.T, seed uint64, shards int) {
	rerun := fmt.Sprintf("DFLY_TEST_SEED=%d go test ./tests/ -run 'TestReplCheckRedis$' -replcheck.runs 1 -replcheck.duration %v", seed, *replCheckDuration)
	t.Logf("seed %d, dfly with %d shards; rerun: %s", seed, shards, rerun)
	ref := startRedis(t)
	srv := StartServer(t, "--shards", fmt.Sprint(shards))
	rc, dc := ref.Raw(t), srv.Raw(t)
	mix := newRCMix(true, rcKeep)
	g := &rcGen{r: rand.New(rand.NewPCG(seed, 0x5eed)), deterministic: true}
	var history []rcDiffEvent
	var reports []string
	db := "0"
	deadline := time.Now().Add(*replCheckDuration)
	compare := func(step int) {
		want, got := rcDigest(t, rc, false), rcDigest(t, dc, false)
		diff := rcDiff(want, got)
		if len(diff) == 0 {
			return
		}
		reports = append(reports, rcDiffReport(step, seed, rerun, diff, want, got, history))
		// Bring the two back in step: drop the differing keys on both.
		for _, k := range diff {
			kdb, key, _ := strings.Cut(k, "/")
			if key == "(dbsize)" {
				continue
			}
			for _, c := range []*RawConn{rc, dc} {
				c.Do("SELECT", kdb)
				c.Do("DEL", key)
				c.Do("SELECT", "0")
			}
		}
	}
	step := 0
	for ; time.Now().Before(deadline) && len(reports) < rcMaxMismatch; step++ {
		cmds := mix.step(g)
		var b strings.Builder
		for _, args := range cmds {
			b.WriteString(EncodeCommand(args...))
		}
		rc.Write(b.String())
		dc.Write(b.String())
		for _, args := range cmds {
			r, d := rc.MustRead(), dc.MustRead()
			history = append(history, rcDiffEvent{step: step, db: db, args: args, redis: rcSummary(r), dfly: rcSummary(d)})
			if strings.EqualFold(args[0], "SELECT") && !r.IsError() {
				db = args[1]
			}
		}
		if (step+1)%rcCompareEvery == 0 {
			compare(step)
		}
	}
	if len(reports) < rcMaxMismatch {
		compare(step)
	}
	t.Logf("%d steps, %d commands", step, len(history))
	if len(reports) > 0 {
		t.Errorf("dfly and redis-server hold different data (seed %d):\n\n%s", seed, strings.Join(reports, "\n\n"))
	}
}

// rcDiffReport describes the keys on which the two servers differ, with
// the commands that named each.
func rcDiffReport(step int, seed uint64, rerun string, diff []string, want, got map[string]string, history []rcDiffEvent) string {
	var b strings.Builder
	fmt.Fprintf(&b, "after step %d (seed %d), %d keys differ: %s\nrerun: %s\n", step, seed, len(diff), strings.Join(diff[:min(len(diff), 20)], " "), rerun)
	shown := 0
	for _, k := range diff {
		if shown == rcShowKeys {
			break
		}
		_, key, _ := strings.Cut(k, "/")
		if key == "(dbsize)" {
			fmt.Fprintf(&b, "%s: redis %s, dfly %s\n", k, want[k], got[k])
			continue
		}
		shown++
		fmt.Fprintf(&b, "\n%s\n  redis: %s\n  dfly:  %s\n  commands naming it (the last %d):\n", k, rcOr(want, k), rcOr(got, k), rcHistory)
		var lines []string
		for _, e := range history {
			if !argsName(e.args, key) {
				continue
			}
			line := fmt.Sprintf("    #%d db%s %s -> redis %s", e.step, e.db, rcLine(e.args), e.redis)
			if e.dfly != e.redis {
				line += ", dfly " + e.dfly
			}
			lines = append(lines, line)
		}
		b.WriteString(strings.Join(lines[max(0, len(lines)-rcHistory):], "\n"))
		b.WriteByte('\n')
	}
	return b.String()
}
