// Package redisacl holds the Redis ACL rules that SECURITY.md documents (its
// section "Redis ACLs"): the least a Locker's user, an operator's user, a
// fenced RedisStore's user and the user of lockwatch fence need. The rules
// live here, once, as Go, so that the tests that apply them to a real
// redis-server (lease/acl_test.go, fence/acl_test.go,
// cmd/lockwatch/fence_acl_test.go) and the test that holds SECURITY.md to them
// (redisacl_test.go) cannot drift apart: a command a script starts to call,
// a key kind the lease package adds, fails the tests until the rules, and
// so the document, follow.
package redisacl

import "strings"

// The default namespaces, and the user names SECURITY.md gives the rules.
const (
	LeaseNamespace = "lockwatch"       // lease.Config.Namespace's default
	StoreNamespace = "lockwatch:fence" // fence.RedisConfig.Namespace's default

	LockerUser        = "lockwatch"
	OperatorUser      = "lockwatch-operator"
	StoreUser         = "lockwatch-store"
	FenceOperatorUser = "lockwatch-fence"
)

// Password is the placeholder SECURITY.md shows in place of a password.
const Password = "CHANGE-ME"

// Locker returns the rules of a lease.Locker's user in namespace ns (and of
// lockwatch run, which is one): Acquire, renewals, Release, Config.Wait's
// queue and grants, Config.ReplicationAcks's WAIT, Check.
//
// The pattern <ns>:{* matches a lease's keys (<ns>:{<hash>}:l, :f, :q, :e,
// internal/leasekeys) and, as a channel pattern, the Lockers' grant
// channels (<ns>:{<id>}:g), and nothing else lockwatch writes: not a fenced
// store's marks, whose default namespace lockwatch:fence a pattern <ns>:*
// would match. The commands are
// those go-redis sends (PING: lockwatch run at start and go-redis's health
// check of the grants' connection; SUBSCRIBE, UNSUBSCRIBE; EVALSHA, and
// EVAL after a NOSCRIPT), those the scripts call (GET, SET, DEL, EXISTS,
// PTTL, PEXPIRE, TIME, PUBLISH; the wait queue's RPUSH, LPOP, LREM, HGET,
// HSET, HDEL: Redis checks each against the caller's ACL), WAIT and INFO
// (Check).
func Locker(ns string) []string {
	return rules(leasePatterns(ns), "+ping", "+info", "+evalsha", "+eval", "+get", "+set", "+del", "+exists", "+pttl", "+pexpire", "+time", "+publish", "+rpush", "+lpop", "+lrem", "+hget", "+hset", "+hdel", "+subscribe", "+unsubscribe", "+wait")
}

// Operator returns the rules of the user of lockwatch inspect and lockwatch
// release --force (Locker.Inspect, Locker.ForceRelease) in namespace ns:
// inspect.lua and force.lua, the grant channels (a force release grants
// the key to a waiter), the hand-off to the wait queue's head (LPOP, HGET, HDEL, and
// TIME for the fence it mints), WAIT (a Locker with
// Config.ReplicationAcks), and PING (the command's first call). It is no
// larger than a Locker's: a force release writes only what a release
// does.
func Operator(ns string) []string {
	return rules(leasePatterns(ns), "+ping", "+evalsha", "+eval", "+get", "+set", "+del", "+exists", "+pttl", "+time", "+publish", "+lpop", "+hget", "+hdel", "+wait")
}

// Store returns the rules of a fence.RedisStore's user in namespace ns (all
// of its resources): write.lua and admit.lua (HGET, HSET, and TIME for the
// bound on unsigned tokens), Read (HMGET), Check (INFO; CONFIG GET save is
// left out, see SECURITY.md). No channels.
func Store(ns string) []string {
	return rules([]string{storeKeys(ns)}, "+evalsha", "+eval", "+hget", "+hset", "+hmget", "+time", "+info")
}

// FenceOperator returns the rules of the user of lockwatch fence, with and
// without --force, for leases in namespace leaseNS and a fence.RedisStore in
// storeNS: it reads the lease's fence record (Locker.Inspect: inspect.lua,
// GET and PTTL), the store's mark (RedisStore.Mark: HGET) and Redis TIME,
// and with --force runs RedisStore.Repair (repair.lua: HGET, TIME, HSET),
// after a PING. No channels: it publishes and subscribes to nothing.
//
// It is the one user with keys in both namespaces, and the one whose write
// lowers a mark, which no service needs: hence a user of its own, held by
// operators, rather than more grants for a Locker's or a store's user.
func FenceOperator(leaseNS, storeNS string) []string {
	return rules([]string{leaseKeys(leaseNS), storeKeys(storeNS)}, "+ping", "+evalsha", "+eval", "+get", "+pttl", "+hget", "+hset", "+time")
}

// Cluster is what each user needs besides on Redis Cluster: go-redis's
// ClusterClient reads the slot map with CLUSTER SLOTS (refused, it cannot
// route a command) and the command table with COMMAND (refused, it logs
// the refusal at every command and carries on).
var Cluster = []string{"+cluster|slots", "+command"}

// rules returns "reset" (so that a rule set again replaces the user's old
// one, where ACL SETUSER adds), "resetchannels" (reset grants every channel
// where acl-pubsub-default is allchannels, Redis 6.2's default, and a
// channel pattern after that is an error), "on", the password placeholder,
// patterns (keys and channels), and commands.
func rules(patterns []string, commands ...string) []string {
	r := append([]string{"reset", "resetchannels", "on", ">" + Password}, patterns...)
	return append(r, commands...)
}

// leasePatterns are the key and channel patterns of lease namespace ns.
func leasePatterns(ns string) []string {
	return []string{leaseKeys(ns), "&" + Escape(ns) + ":{*"}
}

// leaseKeys is the key pattern of lease namespace ns: the brace keeps out
// a store's marks (see Locker).
func leaseKeys(ns string) string { return "~" + Escape(ns) + ":{*" }

// storeKeys is the key pattern of store namespace ns.
func storeKeys(ns string) string { return "~" + Escape(ns) + ":*" }

// Escape quotes the glob characters of a namespace (namespaces may hold
// them) so that a pattern matches that namespace only.
func Escape(ns string) string {
	var b strings.Builder
	for _, c := range ns {
		if strings.ContainsRune(`*?[]\`, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// Line returns the rules as the ACL SETUSER command SECURITY.md shows.
func Line(user string, rules []string) string {
	return "ACL SETUSER " + user + " " + strings.Join(rules, " ")
}

// Documented returns the lines SECURITY.md's section shows, in its order:
// the four users in the default namespaces, then Cluster's additions.
func Documented() []string {
	return []string{
		Line(LockerUser, Locker(LeaseNamespace)),
		Line(OperatorUser, Operator(LeaseNamespace)),
		Line(StoreUser, Store(StoreNamespace)),
		Line(FenceOperatorUser, FenceOperator(LeaseNamespace, StoreNamespace)),
		Line(LockerUser, Cluster),
		Line(OperatorUser, Cluster),
		Line(StoreUser, Cluster),
		Line(FenceOperatorUser, Cluster),
	}
}

// Without returns rules less the ones listed: a user missing a permission.
func Without(rules []string, drop ...string) []string {
	var out []string
	for _, r := range rules {
		keep := true
		for _, d := range drop {
			keep = keep && r != d
		}
		if keep {
			out = append(out, r)
		}
	}
	return out
}
