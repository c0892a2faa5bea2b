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

// RedisStore is a fenced key-value store in Redis. Each key is one Redis
// hash holding a value, the key's high-water mark (the newest token it
// accepted) and the id of the write that set it; a write checks its token
// against the mark and replaces all three in one Lua script, so no write can
// slip between the check and the update. Every operation touches a single
// key, so the store works on a single node, with Sentinel and on Cluster.
//
// Marks never expire: a mark that disappeared would let the oldest token
// write again. Delete a key's record in Redis, which resets its fence, only
// for keys no lease will write again, and keep the store on a Redis that
// keeps its data (Check; the package doc says why).
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
// per-request value. resource and the namespace (c.Namespace) must be 1 to
// 64 bytes of printable ASCII without spaces or braces. The key each method
// takes is the lock key whose leases write it: the store refuses a token it
// cannot trust for that key (Token, SECURITY.md) before comparing, without
// moving the mark.
//
// It panics on a nil client, an invalid resource or an invalid c (its
// fields say what they take): programming errors, which no retry could fix.
func NewRedisStore(client redis.UniversalClient, resource string, c RedisConfig) *RedisStore {
	if client == nil {
		panic("fence: NewRedisStore: nil client")
	}
	if c.Namespace == "" {
		c.Namespace = defaultNamespace
	}
	p, err := newPolicy(c.LockNamespace, c.Secrets, c.PlainTokens, c.MaxSkew)
	for _, err := range []error{validName("resource", resource), validName("Namespace", c.Namespace), err} {
		if err != nil {
			panic("fence: NewRedisStore: " + err.Error())
		}
	}
	return &RedisStore{client: client, resource: resource, prefix: c.Namespace + ":" + resource + ":", policy: p, tel: recorder(c.Telemetry)}
}

// Write stores value under key if token is greater than the key's high-water
// mark, and makes token the mark, in one atomic step. Strict: the same token
// is never accepted twice, so a request replayed under a lease's token
// cannot overwrite what a later write of that lease stored.
//
// A token at or below the mark is a *StaleError (errors.Is ErrStale) with
// the mark as HighWater; one the store cannot trust for key is ErrForeign,
// ErrForged, ErrAhead or ErrUnscoped; neither writes anything. A fence that
// is not positive is ErrMalformed, and Redis is not called. ErrAhead alone
// is not final (SECURITY.md, "The clock bound, per store"): like a Redis
// error it does not say that nothing was written; Read tells.
//
// go-redis re-sends a command whose reply was lost, so each call carries a
// random write id that the script stores with the mark: a copy that finds
// its own token and id there was already applied, and Write returns nil, one
// accepted check, not a stale write that pages. Any other error is Redis
// failing (wrapped as "write <resource>: ..."), and the write may or may not
// have taken effect: calling Write again is a new write, stale if the first
// took effect. Read tells which value is stored.
func (s *RedisStore) Write(ctx context.Context, key string, token Token, value []byte) error {
	return s.run(ctx, key, token, writeArgs{value: value, id: newWriteID()})
}

// newWriteID returns one Write call's id: 128 random bits, made before the
// script runs, so that every copy go-redis sends carries it.
func newWriteID() string { return rand.Text() }

// Admit implements Admitter; a write that may be replayed goes through
// Write, which is strict. Admit and Write on one key share its mark: after
// Admit(k, 7), Write(k, 7, v) is stale.
func (s *RedisStore) Admit(ctx context.Context, key string, token Token) error {
	return s.run(ctx, key, token, admitArgs{})
}

// run checks token for key and, unless the check refuses it, sends op
// with what the check decided, and ends the check by the script's status.
func (s *RedisStore) run(ctx context.Context, key string, token Token, op fenceOp) error {
	bounded, err := s.policy.check(key, token)
	if errors.Is(err, ErrMalformed) {
		return err // a caller's bug, not a check: neither counted nor traced
	}
	rkey := s.redisKey(key)
	ctx, c := startCheck(ctx, s.tel, s.resource, token, attribute.String(obs.AttrKeyHash, keyHash(key)))
	if err != nil {
		return c.refused(fmt.Errorf("%w (%s %s)", err, op.name(), s.resource))
	}
	chk := checked{record: rkey, fence: token.Fence, skew: s.policy.skewArg(bounded)}
	reply, err := op.send(ctx, s.client, chk).Slice()
	var status, mark int64
	switch {
	case isScriptRefusal(err):
		err = fmt.Errorf("fence: %s %s: %w", op.name(), s.resource, err)
	case err != nil: // Redis's or go-redis's, not the fence's
		err = fmt.Errorf("%s %s: %w", op.name(), s.resource, err)
	default:
		if status, mark, err = parseReply(reply); err != nil {
			err = fmt.Errorf("fence: %s %s: %w", op.name(), s.resource, err)
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
			ErrAhead, token.Fence, s.policy.maxSkew, op.name(), s.resource))
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
