package master

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/dfly/dfly/shard"
	"github.com/dfly/dfly/snapshot"
)

// testHost is a master.Host with replication's defaults and nothing else.
type testHost struct{}

func (testHost) Settings() Settings {
	return Settings{ReplBacklogSize: 1 << 20, ReplBacklogTTL: time.Hour, PointInTime: true}
}
func (testHost) Functions() []byte                                        { return nil }
func (testHost) FunctionsAtCut(*shard.Shard, chan<- snapshot.Chunk, bool) {}
func (testHost) TierLoader(*shard.Shard) snapshot.Loader                  { return nil }
func (testHost) WriteRDB(io.Writer, []chan snapshot.Chunk, chan<- []byte) error {
	return nil
}
func (testHost) ReplicaOutputLimit() func(int64) bool { return func(int64) bool { return false } }
func (testHost) IsReplica() bool                      { return false }
func (testHost) Stopping() bool                       { return false }

type nopLog struct{}

func (nopLog) Noticef(string, ...any) {}
func (nopLog) Warnf(string, ...any)   {}

// A replica whose link was cut while it attached its flows says HELLO
// again: the master drops the unfinished session, closing the flows it
// had, so INFO lists the replica once (TestDflyFlowReplication saw a
// stale "send_bulk" entry stay for ever).
func TestHelloAgainDropsUnfinishedSession(t *testing.T) {
	m := New([]*shard.Shard{shard.New(0, 1), shard.New(1, 1)}, testHost{}, nopLog{})
	_, _, s1, _ := m.Hello("127.0.0.1", 7000)
	attach, err := m.Flow(s1, "0", "0", false)
	if err != nil {
		t.Fatal(err)
	}
	ours, theirs := net.Pipe()
	defer theirs.Close()
	attach(ours)
	if rs := m.flowReplicas(); len(rs) != 1 || rs[0].online {
		t.Fatalf("after one of two flows attached: %+v", rs)
	}
	late, err := m.Flow(s1, "1", "0", false) // its second flow, still on its way
	if err != nil {
		t.Fatal(err)
	}
	_, _, other, _ := m.Hello("127.0.0.1", 7001) // another replica: untouched
	_, _, s2, _ := m.Hello("127.0.0.1", 7000)
	if rs := m.flowReplicas(); len(rs) != 0 {
		t.Fatalf("the unfinished session is still listed: %+v", rs)
	}
	_ = theirs.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := theirs.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("the dropped flow's socket: %v, want it closed", err)
	}
	if _, err := m.Flow(s1, "1", "0", false); err == nil {
		t.Fatal("a flow of the dropped session was accepted")
	}
	ours2, theirs2 := net.Pipe()
	defer theirs2.Close()
	go late(ours2) // attaching to the dropped session is refused
	buf := make([]byte, 64)
	_ = theirs2.SetReadDeadline(time.Now().Add(2 * time.Second))
	n, _ := theirs2.Read(buf)
	if got := string(buf[:n]); got != "-ERR unknown replication session\r\n" {
		t.Fatalf("late flow got %q", got)
	}
	for _, s := range []string{s2, other} {
		if _, err := m.Flow(s, "0", "0", false); err != nil {
			t.Fatalf("session %s: %v", s, err)
		}
	}
}
