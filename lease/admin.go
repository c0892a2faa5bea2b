package lease

import (
	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/lockwatch/lockwatch/internal/script"

	"context"
	"fmt"
	"time"
)

// KeyInfo is what Redis holds for one key, as Inspect and ForceRelease read
// it: for an operator (lockwatch inspect), not for deciding who may work. A
// lease is held by whoever's acquire took it; only the fence decides which
// writes count.
type KeyInfo struct {
	Key string
	// Held tells whether a lease holds the key.
	Held bool
	// TTL is the lock key's time to live in Redis: 0 when the key is free,
	// -1 when it is held without an expiry (written by something other
	// than lockwatch).
	TTL time.Duration
	// Fence is the newest fencing token minted for the key, 0 when none is
	// remembered (the fence retention passed, or no lease ever took it):
	// the next acquire mints a larger one.
	Fence fence.Token
	// Barred counts the owner tokens barred on the key's fence record
	// (released, cleaned-up and contended attempts; at most 16 of each),
	// -1 for a record lockwatch cannot have written.
	Barred int
	// Holder is a short hash of the holder's owner token ("" when free):
	// it tells one holder from the next, and the token itself, which could
	// release or renew the lease, never leaves Redis.
	Holder string
}

// holderHashLen is how much of the token's SHA-1 Holder shows: enough to
// tell holders apart, too little to matter if it leaks.
const holderHashLen = 12

// Inspect reads what Redis holds for key: whether it is held, for how much
// longer, its newest fence, its barred tokens and a hash of its holder. One
// read-only script, so the fields come from one moment. It takes the
// Locker's namespace (WithNamespace) and bounds the call by the acquire
// timeout.
func (lk *Locker) Inspect(ctx context.Context, key string) (KeyInfo, error) {
	if key == "" {
		return KeyInfo{}, invalidf("empty key")
	}
	lockKey, fenceKey := redisKeys(lk.set.namespace, key)
	vals, err := lk.runAdmin(ctx, inspectScript.Call(2, lockKey, fenceKey), 4)
	if err != nil {
		return KeyInfo{}, fmt.Errorf("lease: inspect %q: %w", shortKey(key), err)
	}
	info := KeyInfo{Key: key, Holder: holderHash(vals[0]), Fence: fence.Token(toInt(vals[2])), Barred: int(toInt(vals[3]))}
	info.Held = info.Holder != ""
	switch pttl := toInt(vals[1]); {
	case pttl >= 0:
		info.TTL = time.Duration(pttl) * time.Millisecond
	case info.Held:
		info.TTL = -1
	}
	return info, nil
}

// ForceRelease takes key back from whoever holds it: an administrator's
// last resort for a key whose holder is stuck (lockwatch release --force).
// The holder's owner token is barred as the clean-up of an unknown acquire
// bars its own, so the holder's next renewal is rejected (it loses the
// lease, reason renewal_rejected, and its work is cancelled), no late copy
// of its acquire can take the key again, and the next acquirer gets a
// larger fence. Until that renewal the holder may still be working: only
// the fence at the resource stops its writes, as for every lost lease.
//
// It returns the key as it was just before (Held false: the key was free
// and nothing changed), counts the call in
// lockwatch_lease_force_releases_total by result and logs it at Warn. An
// error means the outcome is unknown: the key may or may not be free.
func (lk *Locker) ForceRelease(ctx context.Context, key string) (KeyInfo, error) {
	if key == "" {
		return KeyInfo{}, invalidf("empty key")
	}
	lockKey, fenceKey, mark := leaseKeys(lk.set.namespace, key)
	vals, err := lk.runAdmin(ctx, forceScript.Call(3, lockKey, fenceKey, mark, lk.set.retentionArg), 3)
	info := KeyInfo{Key: key}
	result := obs.ReleaseUnknown
	if err != nil {
		err = fmt.Errorf("lease: force release %q: %w", shortKey(key), err)
	} else {
		info.Held, info.Holder, info.Fence = toInt(vals[0]) == 1, holderHash(vals[1]), fence.Token(toInt(vals[2]))
		result = obs.ReleaseNotHeld
		if info.Held {
			result = obs.ReleaseReleased
		}
	}
	lk.set.rec.ForceReleased(ctx, lk.set.name, key, hashTag(lockKey), string(result), info.Holder, int64(info.Fence), err)
	return info, err
}

// runAdmin runs one of the operator's scripts on its own, bounded by the
// acquire timeout, and returns its reply's n elements.
func (lk *Locker) runAdmin(ctx context.Context, call script.Call, n int) ([]any, error) {
	ctx, cancel := context.WithTimeout(ctx, lk.set.acquireTimeout)
	defer cancel()
	vals, err := script.RunOne(ctx, lk.client, call).Slice()
	if err == nil && len(vals) != n {
		err = fmt.Errorf("unexpected reply %v", vals)
	}
	return vals, err
}

func holderHash(v any) string {
	s, _ := v.(string)
	return s[:min(len(s), holderHashLen)]
}

func toInt(v any) int64 {
	n, _ := v.(int64)
	return n
}
