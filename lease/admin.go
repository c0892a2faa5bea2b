package lease

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockwatch/lockwatch/internal/leaseadmin"
	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/lockwatch/lockwatch/internal/script"
)

// The lockwatch command reads and force-releases permits, and keys known
// by their hash, by their names (package leaseadmin).
func init() {
	leaseadmin.Inspect = func(locker any, ctx context.Context, t leaseadmin.Target) (any, error) {
		return locker.(*Locker).inspect(ctx, t)
	}
	leaseadmin.ForceRelease = func(locker any, ctx context.Context, t leaseadmin.Target, holder string) (any, error) {
		return locker.(*Locker).forceRelease(ctx, t, holder)
	}
}

// KeyInfo is what Redis holds for one key, as Inspect and ForceRelease read
// it: for an operator (lockwatch inspect), not for deciding who may work. A
// lease is held by whoever's acquire took it; only the fence decides which
// writes count.
type KeyInfo struct {
	Key string
	// KeyHash is the key's hash, as on spans, in logs, on the live page
	// (package debugpage) and in Redis.
	KeyHash string
	// Held tells whether a lease holds the key.
	Held bool
	// TTL is the lock key's time to live in Redis: 0 when the key is free,
	// -1 when it is held without an expiry (written by something other
	// than lockwatch).
	TTL time.Duration
	// Fence is the newest fencing token minted for the key, 0 when none is
	// remembered (the fence retention passed, no lease ever took it, or
	// the record is not one lockwatch wrote: Barred is then -1): the next
	// acquire mints a larger one.
	Fence int64
	// Barred counts the owner tokens barred on the key's fence record
	// (released, cleaned-up and contended attempts; at most 16 of each),
	// -1 for a record lockwatch cannot have written.
	Barred int
	// Holder is a short hash of the holder's owner token ("" when free):
	// it tells one holder from the next, and the token itself, which could
	// release or renew the lease, never leaves Redis.
	Holder string
	// HolderReplica is the holder's replica name, its Locker's
	// Config.Replica ("" when free, or when that Locker has none). Inspect
	// reads it; ForceRelease does not.
	HolderReplica string
}

// holderHashLen is how much of the token's SHA-1 Holder shows: enough to
// tell holders apart, too little to matter if it leaks.
const holderHashLen = 12

// Inspect reads what Redis holds for key: whether it is held, for how much
// longer, its newest fence, its barred tokens and a hash of its holder. One
// read-only script, so the fields come from one moment. It takes the Locker's
// namespace (Config.Namespace) and is bounded by the acquire timeout (with
// ContextTimeoutEnabled on the client; without it a stalled read waits for
// the client's ReadTimeout).
func (lk *Locker) Inspect(ctx context.Context, key string) (KeyInfo, error) {
	if key == "" {
		return KeyInfo{}, invalidf("empty key")
	}
	return lk.inspect(ctx, leaseadmin.Target{Key: key, Names: keysOf(lk.set.Namespace, key)})
}

// inspect is Inspect of t's names.
func (lk *Locker) inspect(ctx context.Context, t leaseadmin.Target) (KeyInfo, error) {
	keys := t.Names
	ctx, cancel := context.WithTimeout(ctx, lk.set.AcquireTimeout)
	defer cancel()
	vals, err := reply(script.RunOne(ctx, lk.client, inspectArgs{keys: keys}.call()), 5)
	if err != nil {
		return KeyInfo{}, fmt.Errorf("lease: inspect %q: %w", targetLabel(t), err)
	}
	info := KeyInfo{Key: t.Key, KeyHash: hashTag(keys.Lock), Holder: holderHash(vals[0]), Fence: toInt(vals[2]), Barred: int(toInt(vals[3])), HolderReplica: replicaIn(vals)}
	info.Held = info.Holder != ""
	switch pttl := toInt(vals[1]); {
	case pttl >= 0:
		info.TTL = time.Duration(pttl) * time.Millisecond
	case info.Held:
		info.TTL = -1
	}
	return info, nil
}

// ForceRelease takes key back from holder, the hash Inspect gave for the
// lease to end (KeyInfo.Holder): an administrator's last resort for a key
// whose holder is stuck (lockwatch release --force). Naming the holder makes
// it safe to repeat: a call that finds another holder changes nothing, and a
// go-redis re-send of the call answers what its first copy did.
//
// The holder's token is barred (force.lua): its next renewal, up to TTL/3
// plus the renewal timeout later, is rejected (force_released) and its work
// cancelled; until then only the fence stops its writes. The end is final
// (RELIABILITY.md); the next acquirer gets a larger fence, a waiter is
// woken.
//
// It returns nil when holder's lease was taken by force (by this call, or an
// earlier one whose mark is among the key's 16 newest ends), and ErrNotHeld
// when the key was free or held by another. KeyInfo gives Held and Holder as
// just before (holder when released, else the current holder, if any) and
// Fence; TTL and Barred are not read. Any other error leaves the outcome
// unknown: a transport error, or too few replica acks
// (Config.ReplicationAcks). Counted in lockwatch_lease_force_releases_total,
// logged at Warn, bounded like Inspect (plus the ack timeout).
func (lk *Locker) ForceRelease(ctx context.Context, key, holder string) (KeyInfo, error) {
	if key == "" {
		return KeyInfo{}, invalidf("empty key")
	}
	return lk.forceRelease(ctx, leaseadmin.Target{Key: key, Names: keysOf(lk.set.Namespace, key)}, holder)
}

// forceRelease is ForceRelease of t's names.
func (lk *Locker) forceRelease(ctx context.Context, t leaseadmin.Target, holder string) (KeyInfo, error) {
	if !validHolder(holder) {
		return KeyInfo{}, invalidf("holder %q is not a holder hash (%d lower-case hex digits, as Inspect gives)", holder, holderHashLen)
	}
	keys := t.Names
	lockKey := keys.Lock
	info := KeyInfo{Key: t.Key, KeyHash: hashTag(lockKey)}
	vals, err := lk.force(ctx, lockKey, forceArgs{keys: keys, retention: lk.set.retentionArg, holder: holder}.call())
	result := obs.ReleaseUnknown
	if vals != nil {
		info.Holder, info.Fence = holderHash(vals[1]), toInt(vals[2])
		info.Held = info.Holder != ""
		switch {
		case err != nil: // too few acks: unknown
		case toInt(vals[0]) == 1:
			result = obs.ReleaseReleased
		default:
			result, err = obs.ReleaseNotHeld, ErrNotHeld
		}
	}
	if result == obs.ReleaseUnknown {
		err = fmt.Errorf("lease: force release %q: outcome unknown: %w", targetLabel(t), err)
	}
	lk.set.rec.ForceReleased(ctx, obs.ForceRelease{Lock: lk.set.Name, Key: obs.Key{Raw: t.Key, Hash: info.KeyHash}, Result: result,
		Holder: holder, Fence: info.Fence, Err: err})
	return info, err
}

// targetLabel names t in errors: its key, or its hash when only that is
// known.
func targetLabel(t leaseadmin.Target) string {
	if t.Key == "" {
		return hashTag(t.Names.Lock)
	}
	return shortKey(t.Key)
}

// force runs the force script, with WAIT behind it when the Locker asks
// for replica acknowledgements. It returns the script's reply when it has
// one, with the ack's error.
func (lk *Locker) force(ctx context.Context, lockKey string, call script.Call) ([]any, error) {
	set := lk.set
	if set.ReplicationAcks == 0 {
		ctx, cancel := context.WithTimeout(ctx, set.AcquireTimeout)
		defer cancel()
		return reply(script.RunOne(ctx, lk.client, call), 3)
	}
	ctx, cancel := context.WithTimeout(ctx, set.AcquireTimeout+set.ReplicationTimeout)
	defer cancel()
	cmd, wait, err := lk.runWithAck(ctx, set, lockKey, call)
	if err != nil {
		return nil, err
	}
	vals, err := reply(cmd, 3)
	if err != nil {
		return nil, err
	}
	return vals, ackError(set, wait)
}

// reply returns a script's array reply of n elements.
func reply(cmd *redis.Cmd, n int) ([]any, error) {
	vals, err := cmd.Slice()
	if err == nil && len(vals) != n {
		return nil, fmt.Errorf("unexpected reply %v", vals)
	}
	return vals, err
}

func validHolder(h string) bool {
	if len(h) != holderHashLen {
		return false
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// holderOf is the Holder of an owner token, as the scripts compute it.
func holderOf(owner string) string {
	sum := sha1.Sum([]byte(owner))
	return hex.EncodeToString(sum[:holderHashLen/2])
}

func holderHash(v any) string {
	s, _ := v.(string)
	return s[:min(len(s), holderHashLen)]
}

func toInt(v any) int64 {
	n, _ := v.(int64)
	return n
}
