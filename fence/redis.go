package fence

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"

	"github.com/lockwatch/lockwatch/internal/obs"
)

// RedisStore is a fenced key-value store in Redis: each key holds a value,
// the key's high-water mark (the newest token it accepted) and the id of the
// write that set it, and a write checks its token against the mark and
// replaces all three in one Lua script, so no write can slip between the
// check and the update. Each key is one Redis
// hash, so every operation touches a single key and works unchanged on a
// single node, with Sentinel, and on Cluster.
//
// Marks never expire: a mark that disappeared would let the oldest token
// write again. A key's record is removed only by deleting it in Redis, which
// resets its fence; do that only for keys no lease will write again. For
// the same reason the store's Redis must keep its data across a restart
// and never evict it, which the leases' Redis need not: run the store on a
// Redis with appendonly yes (the leases may share it), and call Check at
// start-up.
//
// A RedisStore is safe for concurrent use.
type RedisStore struct {
	client   redis.UniversalClient
	resource string
	prefix   string // <namespace>:<resource>:
	policy   policy
	tel      *obs.Recorder
}

// NewRedisStore returns a store for resource in client. resource names what
// the store protects (a table, a service) in its keys and as the resource
// attribute of its metrics, so it must come from a small fixed set: never a
// per-request value. resource and the namespace (WithNamespace) must be 1 to
// 64 bytes of printable ASCII without spaces or braces.
//
// The key a store is called with is the lock key whose leases write it
// (within the lease namespace of WithLockNamespace): a token minted for any
// other key is refused (ErrForeign), as are forged ones (WithSecrets,
// WithMaxSkew) and plain numbers (WithPlainTokens), before the mark is
// compared and without moving it. Token lists the checks.
//
// It panics on a nil client or an invalid resource, namespace, lock
// namespace or skew: those are programming errors, which no retry at run
// time could fix.
func NewRedisStore(client redis.UniversalClient, resource string, opts ...Option) *RedisStore {
	if client == nil {
		panic("fence: NewRedisStore: nil client")
	}
	c := newStoreConfig(opts)
	if err := validName("resource", resource); err != nil {
		panic("fence: NewRedisStore: " + err.Error())
	}
	if err := validName("namespace", c.namespace); err != nil {
		panic("fence: NewRedisStore: " + err.Error())
	}
	if err := c.policy.validate(); err != nil {
		panic("fence: NewRedisStore: " + err.Error())
	}
	return &RedisStore{client: client, resource: resource, prefix: c.namespace + ":" + resource + ":", policy: c.policy, tel: recorder(c.tel)}
}

// Write stores value under key if token is greater than the key's
// high-water mark, and makes token the mark, in one atomic step. Strict: the
// same token is never accepted twice, so a request replayed under a lease's
// token cannot overwrite what a later write of that lease stored.
//
// A token at or below the mark is a *StaleError (errors.Is ErrStale) with
// the mark as HighWater, and nothing is written. A token the store cannot
// trust for key is ErrForeign, ErrForged, ErrAhead or ErrUnscoped, and
// nothing is written; one whose fence is not positive is ErrMalformed, and
// Redis is not called. ErrAhead alone is not final: the clock it compares
// with moves on, so a copy of the same write that go-redis re-sent, or
// that a stalled connection delivers late, may be applied once the clock
// has passed the token. Like a Redis error it does not say that nothing
// was written; Read tells.
//
// go-redis re-sends a command after a network error or a read timeout (up to
// the client's MaxRetries), and the first copy may have run with only its
// reply lost; the copy then finds the mark equal to its token. So that this
// is not taken for a stale write (and counted as a rejection, which pages),
// each Write call sends a random write id that the script stores with the
// mark: a copy that finds its own token and id there is the same write,
// already applied, and Write returns nil, one accepted check. Any other
// write with that token is still stale.
//
// Any other error is Redis failing (wrapped as "write <resource>: ...";
// only the fence's own errors start with "fence:"), and the write may or
// may not have taken effect. Calling Write again is a new write, with a new id: it cannot write
// twice, and if the first took effect it is a *StaleError whose HighWater
// equals the token. Read tells which value is stored. The same holds for a
// copy go-redis re-sends only after a newer token was accepted: the value
// was written and has been replaced, and the copy is stale.
func (s *RedisStore) Write(ctx context.Context, key string, token Token, value []byte) error {
	return s.run(ctx, writeOp, key, token, value, newWriteID())
}

// newWriteID returns the id of one Write call: 128 random bits, so no two
// calls share one, and it is made before the script runs, so every copy of
// the call that go-redis sends carries it.
func newWriteID() string { return rand.Text() }

// Admit advances key's high-water mark to token if token is at least the
// mark, and rejects a token below it with a *StaleError (errors.Is
// ErrStale). An equal token is admitted, since one lease may send several
// requests: Admit is for guards in front of a service that serializes the
// writes it lets through, not for writes that may be replayed (use Write).
//
// Admit and Write on the same key share its mark: after Admit(k, 7),
// Write(k, 7, v) is stale. A token refused as Write's are is refused here
// alike, without moving the mark. Any other error is Redis failing, and the
// mark may or may not have moved; nothing should then be let through.
func (s *RedisStore) Admit(ctx context.Context, key string, token Token) error {
	return s.run(ctx, admitOp, key, token)
}

// fenceOp is a fence script that checks a token, and the name its errors
// give it.
type fenceOp struct {
	name   string
	script *redis.Script
}

var (
	writeOp = fenceOp{"write", writeScript}
	admitOp = fenceOp{"admit", admitScript}
)

// run runs a fence script on key with the token's fence, the script's
// further arguments and the clock bound (the last argument), and ends the
// check by the script's status.
func (s *RedisStore) run(ctx context.Context, op fenceOp, key string, token Token, more ...any) error {
	bounded, err := s.policy.check(key, token)
	if errors.Is(err, ErrMalformed) {
		return err // a caller's bug, not a check: neither counted nor traced
	}
	rkey := s.redisKey(key)
	ctx, c := startCheck(ctx, s.tel, s.resource, token, attribute.String(obs.AttrKeyHash, keyHash(key)))
	if err != nil {
		return c.refused(fmt.Errorf("%w (%s %s)", err, op.name, s.resource))
	}
	args := append(append([]any{strconv.FormatInt(token.Fence, 10)}, more...), s.policy.skewArg(bounded))
	reply, err := op.script.Run(ctx, s.client, []string{rkey}, args...).Slice()
	var status, mark int64
	switch {
	case isScriptRefusal(err):
		err = fmt.Errorf("fence: %s %s: %w", op.name, s.resource, err)
	case err != nil: // Redis's or go-redis's, not the fence's
		err = fmt.Errorf("%s %s: %w", op.name, s.resource, err)
	default:
		if status, mark, err = parseReply(reply); err != nil {
			err = fmt.Errorf("fence: %s %s: %w", op.name, s.resource, err)
		}
	}
	if err != nil {
		c.failed(err)
		return err
	}
	switch status {
	case replyStale:
		c.done(false, mark)
		return &StaleError{Resource: s.resource, Token: token, HighWater: mark}
	case replyAhead:
		return c.refused(fmt.Errorf("%w: fence %d is more than %v ahead of the store's Redis TIME (%s %s)",
			ErrAhead, token.Fence, s.policy.maxSkew, op.name, s.resource))
	case replyApplied:
		c.done(true, 0) // the mark before the first copy ran is not known
	default: // replyAccepted
		c.done(true, mark)
	}
	return nil
}

// isScriptRefusal tells the fence scripts' own error replies (a stored mark
// or token that is not canonical, an empty write id: each starts with
// LOCKWATCH) from Redis's and the connection's errors.
func isScriptRefusal(err error) bool {
	var reply redis.Error
	return errors.As(err, &reply) && strings.HasPrefix(reply.Error(), "LOCKWATCH ")
}

// The statuses of write.lua and admit.lua, the first element of a reply.
const (
	replyStale    = 0
	replyAccepted = 1
	replyApplied  = 2 // write.lua only: a re-sent copy of the write that set the mark
	replyAhead    = 3 // an unsigned token beyond the clock bound
)

// parseReply reads {status, mark} from write.lua and admit.lua.
func parseReply(reply []any) (status, mark int64, err error) {
	if len(reply) != 2 {
		return 0, 0, fmt.Errorf("unexpected reply %v", reply)
	}
	status, isInt := reply[0].(int64)
	m, isStr := reply[1].(string)
	if !isInt || !isStr || status < replyStale || status > replyAhead {
		return 0, 0, fmt.Errorf("unexpected reply %v", reply)
	}
	n, err := strconv.ParseInt(m, 10, 64)
	if err != nil || n < 0 {
		return 0, 0, fmt.Errorf("unexpected high-water mark %q", m)
	}
	return status, n, nil
}

// Read returns key's value and high-water mark, for inspection: a value read
// here and written back later is not fenced (only Write is). A key that was
// never written is nil, 0, nil; a key only ever admitted has a mark but a
// nil value.
func (s *RedisStore) Read(ctx context.Context, key string) (value []byte, highWater int64, err error) {
	vals, err := s.client.HMGet(ctx, s.redisKey(key), "value", "fence").Result()
	if err != nil {
		return nil, 0, fmt.Errorf("read %s: %w", s.resource, err)
	}
	if v, ok := vals[0].(string); ok {
		value = []byte(v)
	}
	if m, ok := vals[1].(string); ok {
		if highWater, err = parseFence(m); err != nil {
			return nil, 0, fmt.Errorf("fence: read %s: stored mark: %w", s.resource, err)
		}
	}
	return value, highWater, nil
}
