package acl

import (
	"strings"

	"github.com/dfly/dfly/command"
	"github.com/dfly/dfly/glob"
)

// Denials, as ACL LOG's reasons name them.
const (
	DeniedCommand = "command"
	DeniedKey     = "key"
	DeniedChannel = "channel"
)

// Check reports why r may not run cmd with args ("" when it may): one of
// the Denied reasons, and the object denied: the command, key or channel.
func (r *Rules) Check(cmd *command.Command, args [][]byte) (reason, object string) {
	if cmd.Subs != nil && len(args) > 1 {
		if s := cmd.Subs[strings.ToLower(string(args[1]))]; s != nil {
			if !r.allowed[s] {
				return DeniedCommand, s.Name
			}
		}
	}
	if cmd.Subs == nil && !r.commandAllowed(cmd, args) {
		return DeniedCommand, cmd.Name
	}
	if cmd.Inner != nil {
		return r.checkInner(cmd.Inner(nil, args))
	}
	if !r.allKeys {
		// A command that writes needs W on its keys, one that only reads
		// R (Redis judges each key by its key spec: INCR needs both).
		write := cmd.Flags&command.FlagWrite != 0
		read := !write
		for _, i := range cmd.Keys(nil, args) {
			if !r.keyAllowed(string(args[i]), read, write) {
				return DeniedKey, string(args[i])
			}
		}
	}
	if !r.allChans {
		for _, ch := range channelArgs(cmd, args) {
			if !r.channelAllowed(ch, cmd.Name == "psubscribe" || cmd.Name == "punsubscribe") {
				return DeniedChannel, ch
			}
		}
	}
	return "", ""
}

// checkInner judges what a command carries (command.Command.Inner): each
// command as if called alone, each key it reads itself as a read.
func (r *Rules) checkInner(calls []command.Call) (reason, object string) {
	for _, in := range calls {
		if in.Cmd == nil {
			if !r.allKeys && !r.keyAllowed(string(in.Args[0]), true, false) {
				return DeniedKey, string(in.Args[0])
			}
			continue
		}
		if reason, object := r.Check(in.Cmd, in.Args); reason != "" {
			return reason, object
		}
	}
	return "", ""
}

func (r *Rules) commandAllowed(cmd *command.Command, args [][]byte) bool {
	if len(args) > 1 && (len(r.allowedSub) > 0 || len(r.deniedSub) > 0) {
		sub := cmd.Name + "|" + strings.ToLower(string(args[1]))
		if r.deniedSub[sub] {
			return false
		}
		if r.allowedSub[sub] {
			return true
		}
	}
	return r.allowed[cmd]
}

// keyAllowed: a pattern grants reads (R), writes (W) or both; the access
// asked for (read, write) must be granted by the patterns key matches.
func (r *Rules) keyAllowed(key string, read, write bool) bool {
	canRead, canWrite := !read, !write
	for _, p := range r.keys {
		if glob.MatchString(p.pat, key, false) {
			canRead = canRead || p.read
			canWrite = canWrite || p.write
		}
	}
	return canRead && canWrite
}

// ReadsAnyKey reports whether r may read every key (allkeys, "~*" or
// "%R~*"). Redis 7.0 lets only such a user name keys by pattern, as
// SORT's BY and GET do: the keys they reach are not among the arguments
// Check judges, so a narrower user is refused the option outright.
func (r *Rules) ReadsAnyKey() bool {
	if r.allKeys {
		return true
	}
	for _, p := range r.keys {
		if p.read && p.pat == "*" {
			return true
		}
	}
	return false
}

// channelAllowed: a channel must match a pattern; a pattern subscription
// must be one of the patterns itself.
func (r *Rules) channelAllowed(ch string, literal bool) bool {
	for _, p := range r.channels {
		if literal && p == ch || !literal && glob.MatchString(p, ch, false) {
			return true
		}
	}
	return false
}

// channelArgs are the channels a Pub/Sub command names.
func channelArgs(cmd *command.Command, args [][]byte) []string {
	var from, to int
	switch cmd.Name {
	case "publish", "spublish":
		from, to = 1, 2
	case "subscribe", "psubscribe", "ssubscribe":
		from, to = 1, len(args)
	default:
		return nil
	}
	out := make([]string, 0, to-from)
	for _, a := range args[from:min(to, len(args))] {
		out = append(out, string(a))
	}
	return out
}

// DeniedError is the error reply for a denial.
func DeniedError(reason, object string) string {
	switch reason {
	case DeniedKey:
		return "NOPERM this user has no permissions to access one of the keys used as arguments"
	case DeniedChannel:
		return "NOPERM this user has no permissions to access one of the channels used as arguments"
	}
	return "NOPERM this user has no permissions to run the '" + object + "' command"
}

// ScriptDeniedError is the error a script's call gets.
func ScriptDeniedError(reason string) string {
	switch reason {
	case DeniedKey:
		return "The user executing the script can't access at least one of the keys mentioned in the command arguments"
	case DeniedChannel:
		return "The user executing the script can't publish to the channel mentioned in the command"
	}
	return "The user executing the script can't run this command or subcommand"
}

// DryRunReply is ACL DRYRUN's answer for a denial ("" for none).
func DryRunReply(reason, object string) string {
	switch reason {
	case "":
		return ""
	case DeniedKey:
		return "This user has no permissions to access the '" + object + "' key"
	case DeniedChannel:
		return "This user has no permissions to access the '" + object + "' channel"
	}
	return "This user has no permissions to run the '" + object + "' command"
}

// ChangedError is the reply EXEC gives in place of a queued command the
// user may no longer run (its rules changed after it was queued).
func ChangedError(reason string) string {
	why := "no permission to execute the command or subcommand"
	switch reason {
	case DeniedKey:
		why = "no permission to touch the specified keys"
	case DeniedChannel:
		why = "no permission to access one of the channels used as arguments"
	}
	return "NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. " +
		"This command is no longer allowed for the following reason: " + why
}
