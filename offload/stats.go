package offload

import "github.com/dfly/dfly/tiered"

// Stats are a shard's figures for INFO's tiered section (Fields).
type Stats struct {
	tiered.Stats              // the store's I/O
	Entries, Bytes      int64 // values offloaded now and their lengths
	FileSize, Allocated int64 // the allocator's view of the file
	MaxStepNanos        int64 // the longest offload step
	Loads, SyncLoads    uint64
	ReadServes          uint64
	SerialReads         uint64
	SerialSyncReads     uint64
}

// Stats are t's figures now (on the shard goroutine).
func (t *Shard) Stats() Stats {
	a := t.store.Allocator()
	return Stats{Stats: t.store.Stats, Entries: t.entries, Bytes: t.bytes, FileSize: a.FileSize(),
		Allocated: a.Bytes, MaxStepNanos: t.stepNanos, Loads: t.loads, SyncLoads: t.syncLoads,
		ReadServes: t.readServes, SerialReads: t.serialReads, SerialSyncReads: t.serialSync}
}

// Add adds x's figures to s's (the longest step: the longer of the two).
func (s *Stats) Add(x Stats) {
	s.Entries += x.Entries
	s.Bytes += x.Bytes
	s.FileSize += x.FileSize
	s.Allocated += x.Allocated
	s.MaxStepNanos = max(s.MaxStepNanos, x.MaxStepNanos)
	s.Loads += x.Loads
	s.SyncLoads += x.SyncLoads
	s.ReadServes += x.ReadServes
	s.SerialReads += x.SerialReads
	s.SerialSyncReads += x.SerialSyncReads
	s.Reads += x.Reads
	s.SharedReads += x.SharedReads
	s.Writes += x.Writes
	s.WrittenBytes += x.WrittenBytes
	s.ReadErrors += x.ReadErrors
	s.WriteErrors += x.WriteErrors
	s.PendingReads += x.PendingReads
	s.PendingWrite += x.PendingWrite
	s.Truncations += x.Truncations
}

// Fields writes INFO's tiered section with tiering on (summed over the
// shards): entries/entries_bytes: values offloaded now and their lengths;
// allocated_bytes, file_size: the allocators' view of the files;
// truncations: files shrunk to a free tail; reads: ReadAt calls,
// shared_reads: reads that joined one in flight; read_serves: read-only
// commands served from a read (value left offloaded); loads / sync_loads:
// values loaded back into memory asynchronously / by Find's blocking
// fallback; serializer_reads: reads by SAVE, BGSAVE, full syncs and DEBUG
// RELOAD, serializer_sync_reads: those of them that blocked (View);
// writes, written_bytes: write jobs done; pending_*: I/O in flight;
// read_errors, write_errors: failures (a write error or a full file leaves
// the values in memory); max_step_us: the longest offload step (wall
// time, so it includes time the goroutine was descheduled).
func (s Stats) Fields(field func(string, any)) {
	field("tiered_enabled", 1)
	field("tiered_entries", s.Entries)
	field("tiered_entries_bytes", s.Bytes)
	field("tiered_allocated_bytes", s.Allocated)
	field("tiered_file_size", s.FileSize)
	field("tiered_truncations", s.Truncations)
	field("tiered_reads", s.Reads)
	field("tiered_shared_reads", s.SharedReads)
	field("tiered_read_serves", s.ReadServes)
	field("tiered_loads", s.Loads)
	field("tiered_sync_loads", s.SyncLoads)
	field("tiered_serializer_reads", s.SerialReads)
	field("tiered_serializer_sync_reads", s.SerialSyncReads)
	field("tiered_writes", s.Writes)
	field("tiered_written_bytes", s.WrittenBytes)
	field("tiered_pending_reads", s.PendingReads)
	field("tiered_pending_writes", s.PendingWrite)
	field("tiered_read_errors", s.ReadErrors)
	field("tiered_write_errors", s.WriteErrors)
	field("tiered_max_step_us", s.MaxStepNanos/1000)
}
