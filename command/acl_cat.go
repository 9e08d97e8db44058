package command

import (
	"math/bits"
	"strings"
)

// ACL categories (ACL CAT, +@category rules, COMMAND INFO), derived from a
// command's group and flags the way Redis assigns them: its data type or
// family, @read/@write from its flags (a script's from its calls, not its
// own), @fast or @slow, @admin, @blocking; a command's ACLCats adjust them
// where Redis files it otherwise (@dangerous for the commands that can
// hold a server long over a big keyspace: KEYS, SORT, FLUSHALL ...).

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

// subcommandsOf makes c's subcommands as commands of their own, named
// "container|sub", for ACL rules: @slow and their own ACLCats; nil for a
// command without them, or whose subcommands only COMMAND INFO shows.
func subcommandsOf(c *Command) map[string]*Command {
	if c.Subcommands == nil || c.SubcommandsInfoOnly {
		return nil
	}
	subs := make(map[string]*Command, len(c.Subcommands))
	for _, s := range c.Subcommands {
		subs[s.Name] = &Command{Name: c.Name + "|" + s.Name, Group: c.Group,
			Cats: adjustCategories(CategoryBit("slow"), c.Name+"|"+s.Name, s.ACLCats)}
	}
	return subs
}

// categoriesOf derives c's ACL categories as Redis assigns them: its
// group's, @read/@write from its flags (a script's from its calls, not its
// own), @fast or @slow, @admin and @dangerous for the admin flag,
// @blocking; then ACLCats' adjustments.
func categoriesOf(c *Command) uint32 {
	var cats uint32
	if cat, ok := groupCategory[c.Group]; ok {
		cats |= CategoryBit(cat)
	}
	if c.Group != "scripting" {
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
	if c.Flags&FlagAdmin != 0 {
		cats |= CategoryBit("admin") | CategoryBit("dangerous")
	}
	if c.Flags&FlagBlocking != 0 {
		cats |= CategoryBit("blocking")
	}
	return adjustCategories(cats, c.Name, c.ACLCats)
}

// adjustCategories applies ACLCats' adjustments (of command name) to cats.
func adjustCategories(cats uint32, name, adjust string) uint32 {
	for _, a := range strings.Fields(adjust) {
		cat, remove := strings.CutPrefix(a, "-")
		bit := CategoryBit(cat)
		if bit == 0 {
			panic("command: " + name + ": unknown ACL category " + cat)
		}
		if remove {
			cats &^= bit
		} else {
			cats |= bit
		}
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
