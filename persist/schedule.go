package persist

// The save schedule (Redis's "save <seconds> <changes> ..."): a goroutine
// that starts a BGSAVE when, for some pair, more than <seconds> passed
// since the last save and at least <changes> writes were made. And the
// loading progress INFO persistence and the start-up log report.

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dfly/dfly/shard"
)

// SavePoint is one <seconds> <changes> pair of the save schedule.
type SavePoint struct {
	Seconds int64
	Changes uint64
}

// ParseSave parses a save schedule: pairs of non-negative integers; ""
// (or only spaces) is no schedule.
func ParseSave(v string) ([]SavePoint, error) {
	f := strings.Fields(v)
	if len(f)%2 != 0 {
		return nil, fmt.Errorf("invalid save parameters: pairs of <seconds> <changes> expected")
	}
	var pts []SavePoint
	for i := 0; i < len(f); i += 2 {
		sec, err1 := strconv.ParseInt(f[i], 10, 64)
		ch, err2 := strconv.ParseUint(f[i+1], 10, 64)
		if err1 != nil || err2 != nil || sec < 0 {
			return nil, fmt.Errorf("invalid save parameters")
		}
		pts = append(pts, SavePoint{Seconds: sec, Changes: ch})
	}
	return pts, nil
}

// saveRetryDelay is how long the schedule waits after a failed save
// before it tries again (Redis's CONFIG_BGSAVE_RETRY_DELAY).
const saveRetryDelay = 5 * time.Second

// StartSaveSchedule runs the save schedule once ready is closed (the
// server serves), until done is; it starts no save while stopping. The
// schedule is read on every tick, so CONFIG SET save applies at once.
func (p *Engine) StartSaveSchedule(ready, done <-chan struct{}, stopping func() bool) {
	go func() {
		select {
		case <-ready:
		case <-done:
			return
		}
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		var lastTry time.Time
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			pts, _ := ParseSave(p.settings().Save)
			if len(pts) == 0 || stopping() || p.bgsaving.Load() || p.Loading() {
				continue
			}
			if p.lastFailed.Load() && time.Since(lastTry) < saveRetryDelay {
				continue
			}
			var writes atomic.Uint64
			p.onEachShard(func(sh *shard.Shard) { writes.Add(sh.Stats.Writes) })
			changes := int64(writes.Load()) - int64(p.writesAtSave.Load())
			elapsed := time.Now().Unix() - p.lastSave.Load()
			for _, pt := range pts {
				if changes >= int64(pt.Changes) && changes > 0 && elapsed > pt.Seconds {
					lastTry = time.Now()
					p.log.Noticef("%d changes in %d seconds. Saving...", pt.Changes, pt.Seconds)
					p.StartBgsave()
					break
				}
			}
		}
	}()
}

// loadProgress is the state of a running load for INFO persistence.
type loadProgress struct {
	start  atomic.Int64 // unix seconds
	total  atomic.Int64 // bytes of all files being loaded
	loaded atomic.Int64 // bytes consumed so far
	// usedMem is the memory the file's saver used (its used-mem AUX).
	usedMem atomic.Int64
}

// beginLoad marks a load of total bytes as running; the returned func
// ends it. With logEvery > 0 it logs the progress at that interval.
func (p *Engine) BeginLoad(total int64, logEvery time.Duration) func() {
	p.prog.start.Store(time.Now().Unix())
	p.prog.total.Store(total)
	p.prog.loaded.Store(0)
	p.prog.usedMem.Store(0)
	p.loading.Store(true)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		if logEvery <= 0 {
			<-stop
			return
		}
		t := time.NewTicker(logEvery)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				loaded, total := p.prog.loaded.Load(), p.prog.total.Load()
				p.log.Noticef("Loading: %d of %d bytes (%.1f%%), ETA %d seconds",
					loaded, total, loadPerc(loaded, total), p.loadETA())
			}
		}
	}()
	return func() {
		close(stop)
		<-done
		p.loading.Store(false)
	}
}

func loadPerc(loaded, total int64) float64 {
	if total <= 0 {
		return 0
	}
	return float64(loaded) * 100 / float64(total)
}

// loadETA estimates the seconds left from the rate so far.
func (p *Engine) loadETA() int64 {
	loaded, total := p.prog.loaded.Load(), p.prog.total.Load()
	elapsed := time.Now().Unix() - p.prog.start.Load()
	if loaded <= 0 || elapsed <= 0 {
		return 1
	}
	rate := float64(loaded) / float64(elapsed)
	return int64(float64(total-loaded) / rate)
}

// loadingInfo writes INFO persistence's loading fields.
func (p *Engine) loadingInfo(field func(k string, v any)) {
	if !p.Loading() {
		field("loading", 0)
		return
	}
	loaded, total := p.prog.loaded.Load(), p.prog.total.Load()
	field("loading", 1)
	field("loading_start_time", p.prog.start.Load())
	field("loading_total_bytes", total)
	field("loading_rdb_used_mem", p.prog.usedMem.Load())
	field("loading_loaded_bytes", loaded)
	field("loading_loaded_perc", fmt.Sprintf("%.2f", loadPerc(loaded, total)))
	field("loading_eta_seconds", p.loadETA())
}

// onEachShard runs fn on every shard's goroutine and waits for them.
func (p *Engine) onEachShard(fn func(*shard.Shard)) {
	var wg sync.WaitGroup
	wg.Add(len(p.shards))
	for _, sh := range p.shards {
		sh.Send(shard.Func(func(sh *shard.Shard) { fn(sh); wg.Done() }))
	}
	wg.Wait()
}
