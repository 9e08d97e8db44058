package replica

import (
	"strconv"
	"strings"
	"time"

	"github.com/dfly/dfly/resp"
)

// What a replica reports of its link: INFO replication and ROLE (the
// server asks the replica side first, then the master side).

// Info writes INFO replication's fields for a replica whose link to its
// master at host:port is in state st. Names and order are Redis 7's;
// runID stands for the master's replication id until the first sync.
func (st Status) Info(host string, port int, runID string, field func(k string, v any)) {
	now := time.Now()
	up := st.State == StateConnected
	field("role", "slave")
	field("master_host", host)
	field("master_port", port)
	field("master_link_status", map[bool]string{true: "up", false: "down"}[up])
	lastIO := int64(-1)
	if !st.LastIO.IsZero() {
		lastIO = int64(now.Sub(st.LastIO) / time.Second)
	}
	if up {
		field("master_last_io_seconds_ago", lastIO)
	} else {
		field("master_last_io_seconds_ago", -1)
	}
	field("master_sync_in_progress", boolInt(st.SyncInProgress))
	field("slave_read_repl_offset", st.ReadOffset)
	field("slave_repl_offset", st.Offset)
	if st.SyncInProgress {
		field("master_sync_total_bytes", st.SyncTotal)
		field("master_sync_read_bytes", st.SyncRead)
		left, perc := int64(-1), "0.00"
		if st.SyncTotal > 0 {
			left = st.SyncTotal - st.SyncRead
			perc = strconv.FormatFloat(float64(st.SyncRead)*100/float64(st.SyncTotal), 'f', 2, 64)
		}
		field("master_sync_left_bytes", left)
		field("master_sync_perc", perc)
		field("master_sync_last_io_seconds_ago", lastIO)
	}
	if !up {
		down := int64(-1)
		if !st.LinkDownSince.IsZero() && st.FullSyncs+st.PartialSyncs > 0 {
			down = int64(now.Sub(st.LinkDownSince) / time.Second)
		}
		field("master_link_down_since_seconds", down)
	}
	field("slave_priority", 100)
	field("slave_read_only", 1)
	field("replica_announced", 1)
	field("connected_slaves", 0)
	field("master_failover_state", "no-failover")
	replid := st.ReplID
	if replid == "" {
		replid = runID
	}
	field("master_replid", replid)
	field("master_replid2", strings.Repeat("0", 40))
	field("master_repl_offset", st.Offset)
	field("second_repl_offset", -1)
	field("repl_backlog_active", 0)
	field("repl_backlog_size", 1048576)
	field("repl_backlog_first_byte_offset", 0)
	field("repl_backlog_histlen", 0)
}

// Role answers ROLE for a replica whose link to its master at host:port
// is in state st: "slave", the master's host and port, the link state and
// the offset (-1 while not connected, as Redis).
func (st Status) Role(host string, port int, w *resp.Writer) {
	w.Array(5)
	w.BulkString("slave")
	w.BulkString(host)
	w.Int(int64(port))
	w.BulkString(st.State.String())
	if st.State == StateConnected {
		w.Int(st.Offset)
	} else {
		w.Int(-1)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
