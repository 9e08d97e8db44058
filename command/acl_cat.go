package command

import (
	"math/bits"
	"strings"
)

// ACL categories (ACL CAT, +@category rules, COMMAND INFO), derived from a
// command's group and flags the way Redis assigns them: its data type or
// family, @read/@write from its flags (a script's from its calls, not its
// own), @fast or @slow, @admin, @blocking, and @dangerous for the
// administrative commands and those that can hold a server long over a
// big keyspace (KEYS, SORT, FLUSHALL ...).

var ACLCategories = []string{
	"keyspace", "read", "write", "set", "sortedset", "list", "hash", "string", "bitmap",
	"hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow", "blocking", "dangerous",
	"connection", "transaction", "scripting",
}

// categoryBit returns the bit of category name, or 0 when unknown.
func CategoryBit(name string) uint32 {
	for i, c := range ACLCategories {
		if c == name {
			return 1 << i
		}
	}
	return 0
}

// groupCategory is the category of a command group, when it has one.
var groupCategory = map[string]string{
	"generic": "keyspace", "string": "string", "bitmap": "bitmap", "list": "list", "hash": "hash",
	"set": "set", "sortedset": "sortedset", "stream": "stream", "hyperloglog": "hyperloglog",
	"geo": "geo", "pubsub": "pubsub", "scripting": "scripting", "transactions": "transaction",
	"connection": "connection",
}

// dangerousCommands are @dangerous without being administrative.
var dangerousCommands = map[string]bool{
	"keys": true, "sort": true, "sort_ro": true, "flushall": true, "flushdb": true, "swapdb": true,
	"restore": true, "restore-asking": true, "info": true, "migrate": true, "role": true, "config": true, "client": true,
	"cluster": true, "module": true, "acl": true, "slowlog": true, "latency": true, "function": true,
}

// connectionCommands of other groups that Redis files under @connection.
var connectionCommands = map[string]bool{"readonly": true, "readwrite": true, "asking": true, "wait": true, "command": true}

// notConnection: commands of the connection file that Redis files
// elsewhere (TIME and LOLWUT are server commands).
var notConnection = map[string]bool{"time": true, "lolwut": true, "client": true, "monitor": true}

// regrouped are commands whose file is not their Redis group.
var regrouped = map[string]string{
	"getrange": "string", "setrange": "string", "substr": "string", "lcs": "string",
	"dump": "generic", "restore": "generic", "restore-asking": "generic", "migrate": "generic", "sort": "", "sort_ro": "",
}

// adminCommands are @admin (and @dangerous) without the admin flag.
var adminCommands = map[string]bool{"lastsave": true, "role": true}

// containerCommands have subcommands with categories of their own
// (COMMAND INFO shows the container as @slow only): per container, the
// categories of groups of its subcommands (all @slow), as Redis 7.0 files
// them. ACL rules judge a container's call by its subcommand's
// categories (Table.Subs).
var containerCommands = map[string]map[string][]string{
	"acl": {"admin dangerous": {"deluser", "dryrun", "getuser", "list", "load", "log", "save", "setuser", "users"},
		"": {"cat", "genpass", "help", "whoami"}},
	"client": {"connection": {"caching", "getname", "getredir", "help", "id", "info", "reply", "setname", "tracking", "trackinginfo", "setinfo"},
		"admin dangerous connection": {"kill", "list", "no-evict", "pause", "unblock", "unpause", "no-touch"}},
	"cluster":  {"": {"countkeysinslot", "getkeysinslot", "help", "info", "keyslot", "links", "myid", "nodes", "shards", "slots"}},
	"config":   {"": {"help"}, "admin dangerous": {"get", "resetstat", "rewrite", "set"}},
	"function": {"write scripting": {"delete", "flush", "load", "restore"}, "scripting": {"dump", "help", "kill", "list", "stats"}},
	"latency":  {"admin dangerous": {"doctor", "graph", "histogram", "history", "latest", "reset"}, "": {"help"}},
	"memory":   {"": {"doctor", "help", "malloc-stats", "purge", "stats"}, "read": {"usage"}},
	"module":   {"": {"help"}, "admin dangerous": {"list", "load", "loadex", "unload"}},
	"object":   {"keyspace": {"help"}, "keyspace read": {"encoding", "freq", "idletime", "refcount"}},
	"pubsub":   {"pubsub": {"channels", "numpat", "numsub", "shardchannels", "shardnumsub"}, "": {"help"}},
	"script":   {"scripting": {"debug", "exists", "flush", "help", "kill", "load"}},
	"slowlog":  {"": {"help"}, "admin dangerous": {"get", "len", "reset"}},
	"xgroup":   {"write stream": {"create", "createconsumer", "delconsumer", "destroy", "setid"}, "stream": {"help"}},
	"xinfo":    {"stream": {"help"}, "read stream": {"consumers", "groups", "stream"}},
}

// subcommandsOf makes c's subcommands as commands of their own, named
// "container|sub", for ACL rules; nil for a command without them.
func subcommandsOf(c *Command) map[string]*Command {
	groups, ok := containerCommands[c.Name]
	if !ok {
		return nil
	}
	subs := map[string]*Command{}
	for cats, names := range groups {
		bits := CategoryBit("slow")
		for _, cat := range strings.Fields(cats) {
			bits |= CategoryBit(cat)
		}
		for _, n := range names {
			subs[n] = &Command{Name: c.Name + "|" + n, Group: c.Group, Cats: bits}
		}
	}
	return subs
}

func categoriesOf(c *Command) uint32 {
	var cats uint32
	group := c.Group
	if notConnection[c.Name] {
		group = "server"
	}
	if connectionCommands[c.Name] {
		group = "connection"
	}
	if g, ok := regrouped[c.Name]; ok {
		group = g
	}
	if cat, ok := groupCategory[group]; ok {
		cats |= CategoryBit(cat)
	}
	switch {
	case c.Name == "sort" || c.Name == "sort_ro":
		cats |= CategoryBit("set") | CategoryBit("sortedset") | CategoryBit("list")
	case c.Name == "dbsize" || c.Name == "flushall" || c.Name == "flushdb" || c.Name == "swapdb":
		cats |= CategoryBit("keyspace")
	}
	if group != "scripting" {
		if c.Flags&FlagReadonly != 0 {
			cats |= CategoryBit("read")
		}
		if c.Flags&FlagWrite != 0 {
			cats |= CategoryBit("write")
		}
	}
	if c.Flags&FlagFast != 0 {
		cats |= CategoryBit("fast")
	} else {
		cats |= CategoryBit("slow")
	}
	if c.Flags&FlagAdmin != 0 || adminCommands[c.Name] {
		cats |= CategoryBit("admin") | CategoryBit("dangerous")
	}
	if c.Flags&FlagBlocking != 0 {
		cats |= CategoryBit("blocking")
	}
	if dangerousCommands[c.Name] {
		cats |= CategoryBit("dangerous")
	}
	return cats
}

// categoryNames lists the categories of bits, in ACLCategories' order.
func categoryNames(cats uint32) []string {
	out := make([]string, 0, bits.OnesCount32(cats))
	for i, c := range ACLCategories {
		if cats&(1<<i) != 0 {
			out = append(out, c)
		}
	}
	return out
}

// shownCategories are the categories COMMAND INFO lists for c.
func shownCategories(c *Command) []string {
	if c.Subs != nil {
		return []string{"slow"}
	}
	return categoryNames(c.Cats)
}

// InCategory names the commands in the category of bit, as ACL CAT lists
// them: by name, a container by those of its subcommands in it.
func (t *Table) InCategory(bit uint32) []string {
	var names []string
	for _, c := range t.Sorted() {
		if c.Subs == nil && c.Cats&bit != 0 {
			names = append(names, c.Name)
		}
		for _, sub := range c.Subs {
			if sub.Cats&bit != 0 {
				names = append(names, sub.Name)
			}
		}
	}
	return names
}
