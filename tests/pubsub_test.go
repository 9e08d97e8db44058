package tests

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestPubSubRESP2 covers subscribe confirmations, delivery to channel and
// pattern subscribers, the subscribed-mode restrictions, PING in that
// mode, PUBSUB introspection and unsubscribing.
func TestPubSubRESP2(t *testing.T) {
	srv := StartServer(t)
	sub := srv.Raw(t)
	pub := srv.Raw(t)
	sub.Send("SUBSCRIBE", "news", "sport")
	expectReply(t, sub.MustRead(), "(array)\n  \"subscribe\"\n  \"news\"\n  (integer) 1")
	expectReply(t, sub.MustRead(), "(array)\n  \"subscribe\"\n  \"sport\"\n  (integer) 2")
	sub.Send("PSUBSCRIBE", "n*")
	expectReply(t, sub.MustRead(), "(array)\n  \"psubscribe\"\n  \"n*\"\n  (integer) 3")
	expectReply(t, pub.Do("PUBLISH", "news", "hello"), "(integer) 2")
	expectReply(t, sub.MustRead(), "(array)\n  \"message\"\n  \"news\"\n  \"hello\"")
	expectReply(t, sub.MustRead(), "(array)\n  \"pmessage\"\n  \"n*\"\n  \"news\"\n  \"hello\"")
	expectReply(t, pub.Do("PUBLISH", "nothing-here", "x"), "(integer) 1")
	expectReply(t, sub.MustRead(), "(array)\n  \"pmessage\"\n  \"n*\"\n  \"nothing-here\"\n  \"x\"")
	expectReply(t, pub.Do("PUBLISH", "other", "x"), "(integer) 0")
	expectReply(t, sub.Do("GET", "k"), "(error) ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context")
	expectReply(t, sub.Do("PING"), "(array)\n  \"pong\"\n  \"\"")
	expectReply(t, pub.Do("PUBSUB", "CHANNELS", "n*"), "(array)\n  \"news\"")
	expectReply(t, pub.Do("PUBSUB", "CHANNELS", "x*"), "(empty array)")
	expectReply(t, pub.Do("PUBSUB", "NUMSUB", "news", "none"), "(array)\n  \"news\"\n  (integer) 1\n  \"none\"\n  (integer) 0")
	expectReply(t, pub.Do("PUBSUB", "NUMPAT"), "(integer) 1")
	sub.Send("UNSUBSCRIBE") // all channels, in no promised order
	first, second := sub.MustRead().String(), sub.MustRead().String()
	if !strings.HasSuffix(first, "(integer) 2") || !strings.HasSuffix(second, "(integer) 1") ||
		strings.Contains(first, "news") == strings.Contains(second, "news") {
		t.Fatalf("unsubscribe-all replies:\n%s\n%s", first, second)
	}
	sub.Send("PUNSUBSCRIBE")
	expectReply(t, sub.MustRead(), "(array)\n  \"punsubscribe\"\n  \"n*\"\n  (integer) 0")
	expectReply(t, sub.Do("GET", "k"), "(nil)")
	expectReply(t, pub.Do("PUBLISH", "news", "gone"), "(integer) 0")
	sub.Send("UNSUBSCRIBE")
	expectReply(t, sub.MustRead(), "(array)\n  \"unsubscribe\"\n  (nil)\n  (integer) 0")
}

// TestPubSubRESP3: pushes, and ordinary commands still allowed.
func TestPubSubRESP3(t *testing.T) {
	srv := StartServer(t)
	sub := srv.Raw(t)
	sub.Do("HELLO", "3")
	sub.Send("SUBSCRIBE", "ch")
	expectReply(t, sub.MustRead(), "(push)\n  \"subscribe\"\n  \"ch\"\n  (integer) 1")
	expectReply(t, sub.Do("SET", "k", "v"), "OK")
	pub := srv.Raw(t)
	expectReply(t, pub.Do("PUBLISH", "ch", "m"), "(integer) 1")
	expectReply(t, sub.MustRead(), "(push)\n  \"message\"\n  \"ch\"\n  \"m\"")
	expectReply(t, sub.Do("GET", "k"), "\"v\"")
}

// TestPubSubSlowSubscriber: a subscriber that never reads is disconnected
// once its pending output passes the limit; the server stays healthy.
func TestPubSubSlowSubscriber(t *testing.T) {
	if IsRedis() {
		t.Skip("dfly's limit; redis-server has the same default but takes long to reach it")
	}
	srv := StartServer(t)
	sub := srv.Raw(t)
	sub.Send("SUBSCRIBE", "flood")
	expectReply(t, sub.MustRead(), "(array)\n  \"subscribe\"\n  \"flood\"\n  (integer) 1")
	pub := srv.Raw(t)
	payload := strings.Repeat("x", 64<<10)
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; ; i++ {
		n := pub.Do("PUBLISH", "flood", payload).String()
		if n == "(integer) 0" {
			break // the subscriber was dropped
		}
		if time.Now().After(deadline) {
			t.Fatalf("slow subscriber still connected after %d messages (%d MiB)", i, i/16)
		}
	}
	expectReply(t, pub.Do("PUBSUB", "NUMSUB", "flood"), fmt.Sprintf("(array)\n  \"flood\"\n  (integer) %d", 0))
	expectReply(t, pub.Do("PING"), "PONG")
}

// TestShardedPubSub: Redis 7's shard channels outside a cluster are a
// namespace of their own: SPUBLISH reaches SSUBSCRIBE only (no pattern),
// PUBLISH never reaches them, confirmations count shard channels apart,
// and PUBSUB SHARDCHANNELS / SHARDNUMSUB see them.
func TestShardedPubSub(t *testing.T) {
	srv := StartServer(t)
	sub, psub, pub := srv.Raw(t), srv.Raw(t), srv.Raw(t)
	sub.Send("SSUBSCRIBE", "orders", "users")
	expectReply(t, sub.MustRead(), "(array)\n  \"ssubscribe\"\n  \"orders\"\n  (integer) 1")
	expectReply(t, sub.MustRead(), "(array)\n  \"ssubscribe\"\n  \"users\"\n  (integer) 2")
	sub.Send("SUBSCRIBE", "orders")
	expectReply(t, sub.MustRead(), "(array)\n  \"subscribe\"\n  \"orders\"\n  (integer) 1")
	psub.Send("PSUBSCRIBE", "*")
	expectReply(t, psub.MustRead(), "(array)\n  \"psubscribe\"\n  \"*\"\n  (integer) 1")

	expectReply(t, pub.Do("SPUBLISH", "orders", "o1"), "(integer) 1")
	expectReply(t, sub.MustRead(), "(array)\n  \"smessage\"\n  \"orders\"\n  \"o1\"")
	expectReply(t, pub.Do("PUBLISH", "orders", "o2"), "(integer) 2") // sub's channel and psub's pattern
	expectReply(t, sub.MustRead(), "(array)\n  \"message\"\n  \"orders\"\n  \"o2\"")
	expectReply(t, psub.MustRead(), "(array)\n  \"pmessage\"\n  \"*\"\n  \"orders\"\n  \"o2\"")
	expectReply(t, pub.Do("SPUBLISH", "nobody", "x"), "(integer) 0")

	if got := unorderedString(pub.Do("PUBSUB", "SHARDCHANNELS"), 1); got != "(array of 2)\n\"orders\"\n\"users\"" {
		t.Fatalf("PUBSUB SHARDCHANNELS (any order): %s", got)
	}
	expectReply(t, pub.Do("PUBSUB", "SHARDCHANNELS", "u*"), "(array)\n  \"users\"")
	expectReply(t, pub.Do("PUBSUB", "SHARDNUMSUB", "orders", "nobody"), "(array)\n  \"orders\"\n  (integer) 1\n  \"nobody\"\n  (integer) 0")
	expectReply(t, pub.Do("PUBSUB", "CHANNELS"), "(array)\n  \"orders\"")

	expectReply(t, sub.Do("SUNSUBSCRIBE", "users"), "(array)\n  \"sunsubscribe\"\n  \"users\"\n  (integer) 1")
	expectReply(t, sub.Do("SUNSUBSCRIBE"), "(array)\n  \"sunsubscribe\"\n  \"orders\"\n  (integer) 0")
	expectReply(t, sub.Do("GET", "k"), "(error) ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context")
	expectReply(t, pub.Do("SPUBLISH", "orders", "late"), "(integer) 0")
	expectReply(t, pub.Do("PUBSUB", "SHARDCHANNELS"), "(empty array)")

	// EXEC refuses SSUBSCRIBE (and runs the rest), as Redis does.
	tx := srv.Raw(t)
	expectReply(t, tx.Do("MULTI"), "OK")
	expectReply(t, tx.Do("SSUBSCRIBE", "c"), "QUEUED")
	expectReply(t, tx.Do("SET", "k", "v"), "QUEUED")
	expectReply(t, tx.Do("EXEC"), "(array)\n  (error) ERR SSUBSCRIBE isn't allowed for a DENY BLOCKING client\n  OK")

	// RESP3: a push.
	p3 := srv.Raw(t)
	p3.Do("HELLO", "3")
	p3.Send("SSUBSCRIBE", "c")
	expectReply(t, p3.MustRead(), "(push)\n  \"ssubscribe\"\n  \"c\"\n  (integer) 1")
	if info := p3.Do("CLIENT", "INFO").Str; !strings.Contains(info, " flags=P ") || !strings.Contains(info, " sub=0 psub=0 ssub=1 ") {
		t.Fatalf("CLIENT INFO of a shard channel subscriber: %s", info)
	}
	expectReply(t, pub.Do("SPUBLISH", "c", "m"), "(integer) 1")
	expectReply(t, p3.MustRead(), "(push)\n  \"smessage\"\n  \"c\"\n  \"m\"")
}

// Pub/Sub order under concurrency, 1,000 tries each, publisher and
// subscriber on different event loops: a message published (PUBLISH
// returned) before the subscriber sends PING or UNSUBSCRIBE reaches it
// before that reply; a PUBLISH after the SUBSCRIBE confirmation arrived
// reaches the subscriber (PUBLISH counts it) after the confirmation.
// Checked against redis-server too.
func TestPubSubOrderStress(t *testing.T) {
	srv := StartServer(t, "--proactor_threads", "4")
	const tries = 1000
	pub := srv.Raw(t)
	var subs []*RawConn
	for len(subs) < 3 { // connections land on loops round robin: use several
		subs = append(subs, srv.Raw(t))
	}
	reorders, missed := 0, 0
	for i := 0; i < tries; i++ {
		s := subs[i%len(subs)]
		ch := fmt.Sprintf("ch%d", i)
		// A PUBLISH right after the confirmation: counted and delivered.
		expectReply(t, s.Do("SUBSCRIBE", ch), "(array)\n  \"subscribe\"\n  \""+ch+"\"\n  (integer) 1")
		if n := pub.Do("PUBLISH", ch, "m1").Int; n != 1 {
			missed++
		}
		// m1 is on its way: a PING sent now is answered after it. Then
		// another PUBLISH returns before an UNSUBSCRIBE is sent: m2 first.
		for _, step := range []struct {
			cmd   []string
			reply string
		}{{[]string{"PING"}, "pong"}, {[]string{"UNSUBSCRIBE", ch}, "unsubscribe"}} {
			if step.reply == "unsubscribe" {
				pub.Do("PUBLISH", ch, "m2")
			}
			s.Send(step.cmd...)
			r, err := s.Read()
			if err != nil {
				t.Fatalf("try %d: %v", i, err)
			}
			if len(r.Elems) == 0 || r.Elems[0].Str != "message" {
				reorders++
			}
			for len(r.Elems) == 0 || r.Elems[0].Str != step.reply { // on to the reply, in step
				if r, err = s.Read(); err != nil {
					t.Fatalf("try %d: %v", i, err)
				}
			}
		}
	}
	if reorders != 0 || missed != 0 {
		t.Fatalf("%d tries: %d replies overtook a message, %d publishes after SUBSCRIBE missed it", tries, reorders, missed)
	}
}
