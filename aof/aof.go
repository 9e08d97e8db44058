package aof

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dfly/dfly/config"
	"github.com/dfly/dfly/replica"
	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/tx"
)

// Host is what the AOF needs of persistence (package persist's Engine).
type Host interface {
	// WriteBase writes the dataset at a cut as an RDB file at path,
	// running at(sh) on every shard in the cut's step (which holds them
	// all), and waits for the file.
	WriteBase(path string, at func(*shard.Shard)) error
	// LoadBase loads the RDB file at path into the shards (start-up).
	LoadBase(path string) error
}

// Logger is where the AOF reports, in Redis's words.
type Logger interface {
	Noticef(format string, args ...any)
	Warnf(format string, args ...any)
}

// Manager is the server's append-only file: its writers, rewrites, the
// start-up replay, INFO's aof_* fields and the replies' group commit.
type Manager struct {
	cfg    *config.Config
	shards []*shard.Shard
	host   Host
	log    Logger
	// newApplier applies replayed commands to the shards, as a replica
	// applies its master's.
	newApplier func() replica.Applier

	fsync      atomic.Int32 // appendfsync's policy (Fsync*)
	timestamps atomic.Bool  // aof-timestamp-enabled

	// mu serializes turning the AOF on and off and rewrites.
	mu       sync.Mutex
	writers  []*writer
	ws       atomic.Pointer[[]*writer] // writers, for readers off mu
	manifest *Manifest
	dir      string // the directory the manifest is in
	prefix   string

	on             atomic.Bool
	started        atomic.Bool // the start-up load is done
	rewriting      atomic.Bool
	scheduled      atomic.Bool
	rewriteStart   atomic.Int64 // unix ms of the running rewrite's start
	lastRewriteMs  atomic.Int64 // -1: none yet
	lastRewriteErr atomic.Bool
	rewrites       atomic.Int64
	failures       atomic.Int64 // consecutive failed rewrites
	lastFailure    atomic.Int64 // unix ms of the last failed one
	writeErr       atomic.Bool
	baseSize       atomic.Int64 // the base's size at the last rewrite
	rewriteBase    atomic.Int64 // the AOF's size after the last rewrite (auto-aof-rewrite-percentage's 100%)

	waitMu  sync.Mutex
	waiters []waiter
	stopBg  chan struct{}
}

type waiter struct {
	marks []uint64
	fn    func()
}

// New is the AOF of shards; nothing is written until Start or Enable.
func New(cfg *config.Config, shards []*shard.Shard, host Host, newApplier func() replica.Applier, log Logger) *Manager {
	m := &Manager{cfg: cfg, shards: shards, host: host, newApplier: newApplier, log: log}
	m.lastRewriteMs.Store(-1)
	m.Configure()
	return m
}

// settings read from the configuration.
func (m *Manager) paths() (dir, prefix string) {
	m.cfg.Mu.RLock()
	base := m.cfg.Dir
	m.cfg.Mu.RUnlock()
	return filepath.Join(base, m.cfg.Value("appenddirname")), m.cfg.Value("appendfilename")
}

// Wanted reports whether appendonly is yes.
func (m *Manager) Wanted() bool { return m.cfg.Value("appendonly") == "yes" }

// Configure applies the configuration's current values (after CONFIG SET):
// the fsync policy and timestamps at once; appendonly's change in the
// background (turning it on writes a base first, as Redis).
func (m *Manager) Configure() {
	m.fsync.Store(int32(ParseFsync(m.cfg.Value("appendfsync"))))
	m.timestamps.Store(m.cfg.Value("aof-timestamp-enabled") == "yes")
	for _, w := range m.current() {
		w.nudge()
	}
	if !m.started.Load() {
		return // before the start-up load's end: it decides
	}
	if want := m.Wanted(); want != m.on.Load() {
		go func() {
			if want {
				m.enable()
			} else {
				m.disable()
			}
		}()
	}
}

func (m *Manager) current() []*writer {
	if p := m.ws.Load(); p != nil {
		return *p
	}
	return nil
}

// Load is the start-up load when appendonly is yes (instead of the RDB):
// the manifest's base, then each generation of incremental files; then
// the AOF is started (a new generation of files, or a first base when
// there was no manifest).
func (m *Manager) Load() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stopBg = make(chan struct{})
	dir, prefix := m.paths()
	man, err := ReadManifest(dir, prefix)
	if err != nil {
		return err
	}
	if man != nil {
		if err := m.replay(dir, man); err != nil {
			return err
		}
		m.dir, m.prefix, m.manifest = dir, prefix, man
		var size int64
		for _, f := range man.Files {
			if st, err := os.Stat(filepath.Join(dir, f.Name)); err == nil {
				size += st.Size()
			}
		}
		m.baseSize.Store(size)
		m.rewriteBase.Store(size)
		if err := m.openGeneration(); err != nil {
			return err
		}
		Prune(dir, prefix, m.manifest)
	} else if err := m.rewriteLocked(true); err != nil {
		return err
	}
	m.on.Store(true)
	m.started.Store(true)
	go m.autoRewrite(m.stopBg)
	return nil
}

// StartupLoad is the server's start-up load: the AOF's (Load) when
// appendonly is yes, as Redis's, else rdb's; CONFIG SET appendonly takes
// effect once it is done.
func (m *Manager) StartupLoad(rdb func() error) func() error {
	return func() error {
		if m.Wanted() {
			return m.Load()
		}
		err := rdb()
		m.mu.Lock()
		m.stopBg = make(chan struct{})
		m.mu.Unlock()
		m.started.Store(true)
		m.Configure()
		return err
	}
}

// replay loads man's files.
func (m *Manager) replay(dir string, man *Manifest) error {
	start := time.Now()
	if os.Getenv("GOGC") == "" {
		// As persist's start-up load: the heap only grows meanwhile, and
		// collecting while it does would scan the dataset again and again.
		defer debug.SetGCPercent(debug.SetGCPercent(-1))
	}
	if b := man.Base(); b != nil {
		path := filepath.Join(dir, b.Name)
		rdbBase, err := isRDB(path)
		if err != nil {
			return fmt.Errorf("The AOF file %s doesn't exist", b.Name)
		}
		if rdbBase {
			if err := m.host.LoadBase(path); err != nil {
				return fmt.Errorf("loading the AOF base %s: %w", b.Name, err)
			}
		} else if err := m.replayGeneration(dir, []File{*b}); err != nil {
			return err
		}
		m.log.Noticef("DB loaded from base file %s: %.3f seconds", b.Name, time.Since(start).Seconds())
	}
	for _, g := range man.Generations() {
		t := time.Now()
		if err := m.replayGeneration(dir, g); err != nil {
			return err
		}
		m.log.Noticef("DB loaded from incr file %s: %.3f seconds", g[0].Name, time.Since(t).Seconds())
	}
	m.log.Noticef("DB loaded from append only file: %.3f seconds", time.Since(start).Seconds())
	return nil
}

// isRDB reports whether the file starts with the RDB magic.
func isRDB(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	var b [5]byte
	_, err = io.ReadFull(f, b[:])
	return err == nil && string(b[:]) == "REDIS", nil
}

func (m *Manager) replayGeneration(dir string, files []File) error {
	r := &replayer{apply: m.newApplier()}
	srcs, err := r.generation(dir, files)
	for _, s := range srcs {
		if !s.eof { // stopped early: let its parser end
			for range s.items {
			}
			s.end = <-s.tail
		}
	}
	if err != nil {
		return err
	}
	for _, s := range srcs {
		if s.end.err != nil {
			return s.end.err
		}
	}
	truncate := m.cfg.Value("aof-load-truncated") == "yes"
	for _, s := range srcs {
		if !s.end.truncated {
			continue
		}
		m.log.Warnf("!!! Warning: short read while loading the AOF file %s!!!", s.name)
		if !truncate {
			return fmt.Errorf("Unexpected end of file reading the append only file %s. You can: 1) Make a backup of your AOF file, then use ./redis-check-aof --fix <filename.manifest>. 2) Alternatively you can set the 'aof-load-truncated' configuration option to yes and restart the server.", s.name)
		}
		m.log.Warnf("!!! Truncating the AOF %s at offset %d !!!", s.name, s.end.valid)
		if err := os.Truncate(filepath.Join(dir, s.name), s.end.valid); err != nil {
			return fmt.Errorf("Error truncating the AOF file %s: %w", s.name, err)
		}
		m.log.Warnf("AOF %s loaded anyway because aof-load-truncated is enabled", s.name)
	}
	if r.dropped > 0 {
		m.log.Warnf("AOF: %d parts of transactions not wholly on disk were not applied", r.dropped)
	}
	return nil
}

// openGeneration starts a new generation of per-shard incremental files
// after the manifest's, named in it before any entry goes there, and
// subscribes the writers (start-up: nothing writes meanwhile). mu held.
func (m *Manager) openGeneration() error {
	files, next, err := m.newFiles(m.manifest)
	if err != nil {
		return err
	}
	if err := WriteManifest(m.dir, m.prefix, next); err != nil {
		closeAll(files)
		return err
	}
	m.manifest = next
	m.writers = make([]*writer, len(m.shards))
	t := tx.New(m.shards)
	t.AddAllShards()
	t.Lock()
	t.Finish(func(sh *shard.Shard) { m.attach(sh, files[sh.ID]) })
	m.publishWriters()
	return nil
}

// newFiles creates the per-shard files of the generation after man's and
// returns them with man plus them.
func (m *Manager) newFiles(man *Manifest) ([]*os.File, *Manifest, error) {
	if err := os.MkdirAll(m.dir, 0o755); err != nil {
		return nil, nil, err
	}
	next := &Manifest{}
	if man != nil {
		next.Files = append(next.Files, man.Files...)
	}
	seq := next.NextSeq(false)
	files := make([]*os.File, len(m.shards))
	for i := range files {
		name := ShardName(m.prefix, seq, i)
		f, err := os.OpenFile(filepath.Join(m.dir, name), os.O_CREATE|os.O_WRONLY|os.O_TRUNC|os.O_APPEND, 0o644)
		if err != nil {
			closeAll(files[:i])
			return nil, nil, err
		}
		files[i] = f
		next.Files = append(next.Files, File{Name: name, Seq: seq, Type: TypeShard, Shard: i})
	}
	return files, next, nil
}

func closeAll(files []*os.File) {
	for _, f := range files {
		if f != nil {
			f.Close()
		}
	}
}

// attach makes f shard sh's incremental file from now on; on sh's
// goroutine, in a step that holds every shard.
func (m *Manager) attach(sh *shard.Shard, f *os.File) {
	if w := m.writers[sh.ID]; w != nil {
		w.switchTo(f)
		return
	}
	w := newWriter(m, sh.ID, f, 0)
	w.sub, _ = sh.Journal.Subscribe(w.entry)
	m.writers[sh.ID] = w
}

func (m *Manager) publishWriters() {
	ws := append([]*writer(nil), m.writers...)
	m.ws.Store(&ws)
}

// enable turns the AOF on at run time: a rewrite (base and first
// incremental files), as Redis's CONFIG SET appendonly yes.
func (m *Manager) enable() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.on.Load() || !m.Wanted() {
		return
	}
	m.dir, m.prefix = m.paths()
	man, err := ReadManifest(m.dir, m.prefix)
	if err != nil {
		m.log.Warnf("%v: the old AOF files are left out", err)
	}
	m.manifest = man
	if err := m.rewriteLocked(true); err != nil {
		return
	}
	m.on.Store(true)
	m.stopBg = make(chan struct{})
	go m.autoRewrite(m.stopBg)
}

// disable turns the AOF off: the writers stop after writing what they
// hold; the files stay.
func (m *Manager) disable() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.on.Load() || m.Wanted() {
		return
	}
	m.stopWriters()
	if m.stopBg != nil {
		close(m.stopBg)
		m.stopBg = make(chan struct{})
	}
	m.on.Store(false)
}

// stopWriters unsubscribes and stops every writer. mu held.
func (m *Manager) stopWriters() {
	if m.writers == nil {
		return
	}
	t := tx.New(m.shards)
	t.AddAllShards()
	t.Lock()
	t.Finish(func(sh *shard.Shard) {
		if w := m.writers[sh.ID]; w != nil {
			sh.Journal.Unsubscribe(w.sub)
		}
	})
	for _, w := range m.writers {
		if w != nil {
			w.stop()
		}
	}
	m.writers = nil
	m.ws.Store(nil)
	m.releaseWaiters()
}

// Shutdown writes and syncs what the writers hold (SHUTDOWN, SIGTERM). It
// takes no lock: a rewrite may hold mu for a snapshot the stopped loops
// will never finish.
func (m *Manager) Shutdown() {
	for _, w := range m.current() {
		w.mu.Lock()
		w.closing = true
		w.mu.Unlock()
		w.nudge()
		select {
		case <-w.done:
		case <-time.After(5 * time.Second): // a disk that does not answer
		}
	}
}

// StartRewrite is BGREWRITEAOF: it returns Redis's reply, or an error.
func (m *Manager) StartRewrite() (string, error) {
	if !m.rewriting.CompareAndSwap(false, true) {
		return "", errors.New("ERR Background append only file rewriting already in progress")
	}
	go func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.dir == "" || !m.on.Load() {
			m.dir, m.prefix = m.paths()
			if m.manifest == nil {
				m.manifest, _ = ReadManifest(m.dir, m.prefix)
			}
		}
		_ = m.rewriteLocked(false)
	}()
	return "Background append only file rewriting started", nil
}

// rewriteLocked writes a new base and starts new incremental files at its
// cut: the new files are named in the manifest (after the old ones)
// before the cut, so a failed base loses nothing; once the base is
// complete the manifest names only it and them, and the old files go.
// attach: subscribe writers that do not exist yet. mu held.
func (m *Manager) rewriteLocked(attach bool) (err error) {
	m.rewriting.Store(true)
	start := time.Now()
	m.rewriteStart.Store(start.UnixMilli())
	defer func() {
		m.rewriting.Store(false)
		m.lastRewriteMs.Store(time.Since(start).Milliseconds())
		m.lastRewriteErr.Store(err != nil)
		if err != nil {
			m.failures.Add(1)
			m.lastFailure.Store(time.Now().UnixMilli())
			m.log.Warnf("Background AOF rewrite failed: %v", err)
			return
		}
		m.failures.Store(0)
		m.rewrites.Add(1)
		m.log.Noticef("Background AOF rewrite finished successfully")
	}()
	if m.dir == "" {
		m.dir, m.prefix = m.paths()
	}
	live := attach || m.on.Load()
	var files []*os.File
	next := &Manifest{}
	if m.manifest != nil {
		next.Files = append(next.Files, m.manifest.Files...)
	}
	if err := os.MkdirAll(m.dir, 0o755); err != nil {
		return err
	}
	if live {
		if m.writers == nil {
			m.writers = make([]*writer, len(m.shards))
		}
		if files, next, err = m.newFiles(m.manifest); err != nil {
			return err
		}
		if err := WriteManifest(m.dir, m.prefix, next); err != nil {
			closeAll(files)
			return err
		}
		m.manifest = next
	}
	base := BaseName(m.prefix, next.NextSeq(true))
	m.log.Noticef("Background append only file rewriting started")
	err = m.host.WriteBase(filepath.Join(m.dir, base), func(sh *shard.Shard) {
		if live {
			m.attach(sh, files[sh.ID])
		}
	})
	if live {
		m.publishWriters()
	}
	if err != nil {
		return err
	}
	final := &Manifest{Files: []File{{Name: base, Seq: next.NextSeq(true), Type: TypeBase, Shard: -1}}}
	for _, f := range next.Files {
		if f.Type == TypeShard && len(files) > 0 && f.Seq == next.NextSeq(false)-1 {
			final.Files = append(final.Files, f)
		}
	}
	if err := WriteManifest(m.dir, m.prefix, final); err != nil {
		return err
	}
	m.manifest = final
	Prune(m.dir, m.prefix, final)
	if st, err := os.Stat(filepath.Join(m.dir, base)); err == nil {
		m.baseSize.Store(st.Size())
		m.rewriteBase.Store(st.Size())
	}
	return nil
}

// autoRewrite rewrites when the files grew by auto-aof-rewrite-percentage
// over their size after the last rewrite and passed
// auto-aof-rewrite-min-size; after failures it backs off (a minute, then
// doubling, at most an hour) instead of piling files up.
func (m *Manager) autoRewrite(stop chan struct{}) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		if m.rewriting.Load() || !m.on.Load() {
			continue
		}
		if m.scheduled.Load() && m.rewriting.CompareAndSwap(false, true) {
			m.scheduled.Store(false)
			m.mu.Lock()
			_ = m.rewriteLocked(false)
			m.mu.Unlock()
			continue
		}
		if n := m.failures.Load(); n > 0 {
			wait := time.Minute << min(n-1, 6)
			if wait > time.Hour {
				wait = time.Hour
			}
			if time.Since(time.UnixMilli(m.lastFailure.Load())) < wait {
				continue
			}
		}
		perc := m.cfg.Value("auto-aof-rewrite-percentage")
		minSize, _ := config.ParseMemory(m.cfg.Value("auto-aof-rewrite-min-size"))
		var p int64
		fmt.Sscan(perc, &p)
		if p <= 0 {
			continue
		}
		cur := m.currentSize()
		base := max(m.rewriteBase.Load(), 1)
		if cur > minSize && (cur*100/base)-100 >= p {
			m.log.Noticef("Starting automatic rewriting of AOF on %d%% growth", (cur*100/base)-100)
			if !m.rewriting.CompareAndSwap(false, true) {
				continue
			}
			m.mu.Lock()
			_ = m.rewriteLocked(false)
			m.mu.Unlock()
		}
	}
}

// currentSize is aof_current_size: the base and the incremental files.
func (m *Manager) currentSize() int64 {
	n := m.baseSize.Load()
	for _, w := range m.current() {
		n += w.size.Load()
	}
	return n
}

// Resync has the AOF rewritten soon: the dataset was replaced without the
// journal (a replica's full sync), as Redis rewrites its AOF then.
func (m *Manager) Resync() {
	if m.on.Load() {
		m.scheduled.Store(true)
	}
}

// On reports whether the AOF is written.
func (m *Manager) On() bool { return m.on.Load() }

func (m *Manager) writeFailed(failed bool) {
	if m.writeErr.Load() != failed {
		m.writeErr.Store(failed)
	}
}

// Always reports whether replies wait for the fsync (appendfsync always).
func (m *Manager) Always() bool {
	return m.fsync.Load() == FsyncAlways && m.ws.Load() != nil
}

// Marks are the writers' appended positions now: a reply to writes done
// before waits until every writer synced past its mark (WhenSynced).
func (m *Manager) Marks() []uint64 {
	ws := m.current()
	if ws == nil {
		return nil
	}
	marks := make([]uint64, len(ws))
	for i, w := range ws {
		marks[i] = w.appended.Load()
	}
	return marks
}

func (m *Manager) covered(marks []uint64) bool {
	ws := m.current()
	if ws == nil || len(ws) != len(marks) {
		return true // turned off: nothing to wait for
	}
	for i, w := range ws {
		if w.synced.Load() < marks[i] {
			return false
		}
	}
	return true
}

// WhenSynced calls fn once the writers synced past marks, and reports
// true; false (fn not called) when they already have.
func (m *Manager) WhenSynced(marks []uint64, fn func()) bool {
	if m.covered(marks) {
		return false
	}
	m.waitMu.Lock()
	m.waiters = append(m.waiters, waiter{marks: marks, fn: fn})
	m.waitMu.Unlock()
	m.wake() // a sync may have ended meanwhile
	return true
}

// wake calls the waiters whose marks are synced.
func (m *Manager) wake() {
	m.waitMu.Lock()
	if len(m.waiters) == 0 {
		m.waitMu.Unlock()
		return
	}
	var ready []func()
	kept := m.waiters[:0]
	for _, w := range m.waiters {
		if m.covered(w.marks) {
			ready = append(ready, w.fn)
		} else {
			kept = append(kept, w)
		}
	}
	clear(m.waiters[len(kept):])
	m.waiters = kept
	m.waitMu.Unlock()
	for _, fn := range ready {
		fn()
	}
}

func (m *Manager) releaseWaiters() {
	m.waitMu.Lock()
	ws := m.waiters
	m.waiters = nil
	m.waitMu.Unlock()
	for _, w := range ws {
		w.fn()
	}
}

// Info writes INFO persistence's aof_* fields, as Redis 7.0.
func (m *Manager) Info(field func(k string, v any)) {
	b := func(v bool) int {
		if v {
			return 1
		}
		return 0
	}
	status := func(failed bool) string {
		if failed {
			return "err"
		}
		return "ok"
	}
	on := m.on.Load()
	field("aof_enabled", b(on))
	field("aof_rewrite_in_progress", b(m.rewriting.Load()))
	field("aof_rewrite_scheduled", b(m.scheduled.Load()))
	last := m.lastRewriteMs.Load()
	if last >= 0 {
		last /= 1000
	}
	field("aof_last_rewrite_time_sec", last)
	cur := int64(-1)
	if m.rewriting.Load() {
		cur = (time.Now().UnixMilli() - m.rewriteStart.Load()) / 1000
	}
	field("aof_current_rewrite_time_sec", cur)
	field("aof_last_bgrewrite_status", status(m.lastRewriteErr.Load()))
	field("aof_rewrites", m.rewrites.Load())
	field("aof_rewrites_consecutive_failures", m.failures.Load())
	field("aof_last_write_status", status(m.writeErr.Load()))
	field("aof_last_cow_size", 0)
	field("module_fork_in_progress", 0)
	field("module_fork_last_cow_size", 0)
	if !on {
		return
	}
	field("aof_current_size", m.currentSize())
	field("aof_base_size", m.baseSize.Load())
	field("aof_pending_rewrite", 0)
	var buffered uint64
	for _, w := range m.current() {
		buffered += w.appended.Load() - w.synced.Load()
	}
	field("aof_buffer_length", buffered)
	field("aof_pending_bio_fsync", 0)
	field("aof_delayed_fsync", 0)
}
