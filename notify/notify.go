package notify

import (
	"errors"
	"strconv"
	"sync/atomic"
)

// Class is a set of notify-keyspace-events' classes, one bit per letter.
type Class uint32

// The classes, with Redis's letters.
const (
	Keyspace Class = 1 << iota // K: __keyspace@<db>__:<key>, the event as message
	Keyevent                   // E: __keyevent@<db>__:<event>, the key as message
	Generic                    // g: DEL, EXPIRE, RENAME, COPY, MOVE, RESTORE ...
	String                     // $
	List                       // l
	Set                        // s
	Hash                       // h
	ZSet                       // z
	Expired                    // x: a key expired (lazily or by the active sweep)
	Evicted                    // e: a key dropped for memory
	Stream                     // t
	KeyMiss                    // m: a read found no key (not part of A)
	Module                     // d
	New                        // n: a key was created (not part of A)

	// All is A: every class but m and n, as Redis's NOTIFY_ALL.
	All = Generic | String | List | Set | Hash | ZSet | Expired | Evicted | Stream | Module
)

// letters are the class letters in the order Redis shows them: the
// type classes, then K, E and m.
var letters = []struct {
	c  Class
	ch byte
}{
	{Generic, 'g'}, {String, '$'}, {List, 'l'}, {Set, 's'}, {Hash, 'h'}, {ZSet, 'z'},
	{Expired, 'x'}, {Evicted, 'e'}, {Stream, 't'}, {Module, 'd'}, {New, 'n'},
	{Keyspace, 'K'}, {Keyevent, 'E'}, {KeyMiss, 'm'},
}

// ErrClass is Redis's reply to a letter it does not know.
var ErrClass = errors.New("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.")

// Parse reads notify-keyspace-events' letters, in any order and repeated
// as Redis takes them.
func Parse(s string) (Class, error) {
	var c Class
	for i := 0; i < len(s); i++ {
		if s[i] == 'A' {
			c |= All
			continue
		}
		found := false
		for _, l := range letters {
			if l.ch == s[i] {
				c, found = c|l.c, true
				break
			}
		}
		if !found {
			return 0, ErrClass
		}
	}
	return c, nil
}

// String is the classes as CONFIG GET shows them: "A" for All, else the
// type classes' letters, then K, E and m, in Redis's order (n is set
// but not shown with A, as in Redis 7.0).
func (c Class) String() string {
	var b []byte
	for _, l := range letters {
		switch {
		case (l.c&All != 0 || l.c == New) && c&All == All: // Redis hides n behind A
			if l.c == Generic {
				b = append(b, 'A')
			}
		case c&l.c != 0:
			b = append(b, l.ch)
		}
	}
	return string(b)
}

// Notifier publishes the events of the classes it is set to; one is
// shared by every shard of a server. Its methods may be called on a nil
// Notifier (a shard without a server): they do nothing.
type Notifier struct {
	classes atomic.Uint32
	// Publish delivers a message on a Pub/Sub channel, as PUBLISH does,
	// without blocking; set before the server serves.
	Publish func(channel, message []byte)
}

// SetClasses sets the classes published (CONFIG SET).
func (n *Notifier) SetClasses(c Class) { n.classes.Store(uint32(c)) }

// Classes are the classes set.
func (n *Notifier) Classes() Class { return Class(n.classes.Load()) }

// On reports whether an event of class c would be published: c is set,
// and so is K or E. It costs one atomic load, what a write pays while
// notifications are off.
func (n *Notifier) On(c Class) bool {
	if n == nil {
		return false
	}
	set := Class(n.classes.Load())
	return set&c != 0 && set&(Keyspace|Keyevent) != 0 && n.Publish != nil
}

// Emit publishes event (Redis's name: "set", "del", "expired" ...) of
// class c on key of database db, on the keyspace channel, then on the
// keyevent channel, as Redis's notifyKeyspaceEvent.
func (n *Notifier) Emit(c Class, event string, db int, key []byte) {
	if !n.On(c) {
		return
	}
	set := n.Classes()
	if set&Keyspace != 0 {
		ch := make([]byte, 0, len("__keyspace@__:")+4+len(key))
		ch = strconv.AppendInt(append(ch, "__keyspace@"...), int64(db), 10)
		ch = append(append(ch, "__:"...), key...)
		n.Publish(ch, []byte(event))
	}
	if set&Keyevent != 0 {
		ch := make([]byte, 0, len("__keyevent@__:")+4+len(event))
		ch = strconv.AppendInt(append(ch, "__keyevent@"...), int64(db), 10)
		ch = append(append(ch, "__:"...), event...)
		n.Publish(ch, key)
	}
}
