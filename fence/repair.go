package fence

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/lockwatch/lockwatch/internal/obs"
)

// Repair sets key's high-water mark back to target = max(floor, the store's
// Redis TIME in microseconds + MaxSkew), in one step, if the mark is still
// seen (the caller inspected it with Mark) and above target: the repair of a
// mark that a token no lease carried moved ahead of every lease (the package
// doc, "Repair"; why it is safe: RELIABILITY.md, "The model"). floor is the
// newest fence minted for the key. It returns the mark after the call and
// whether it was set back; if not, mark is the key's current one (0 for
// none): seen, or another that moved since (inspect again). A repair is
// counted in lockwatch.fence.repairs and logged at Warn; the value stays.
// seen and floor must be positive (ErrMalformed, before Redis is called); a
// stored mark that is not a fence is an error starting "fence:"; any other
// error is Redis failing, and Mark tells whether the mark was set back.
//
// The SQL tables have no Repair: there it is one statement, run in the
// database (PostgreSQL; MySQL reads SYSDATE(6), as the tables' bound does):
//
//	UPDATE <Table> SET <FenceColumn> = GREATEST(<floor>, (extract(epoch FROM clock_timestamp()) * 1000000)::bigint + <skew µs>)
//	 WHERE <KeyColumn> = <key> AND <FenceColumn> = <seen>
//	   AND <FenceColumn> > GREATEST(<floor>, (extract(epoch FROM clock_timestamp()) * 1000000)::bigint + <skew µs>)
func (s *RedisStore) Repair(ctx context.Context, key string, seen, floor int64) (mark int64, repaired bool, err error) {
	if seen <= 0 || floor <= 0 {
		return 0, false, fmt.Errorf("%w: repair %s: seen %d and floor %d must be positive", ErrMalformed, s.resource, seen, floor)
	}
	call := repairArgs{record: s.redisKey(key), seen: seen, floor: floor, skew: s.policy.maxSkew.Microseconds()}
	reply, err := call.send(ctx, s.client).Slice()
	switch {
	case isScriptRefusal(err):
		return 0, false, fmt.Errorf("fence: repair %s: %w", s.resource, err)
	case err != nil: // Redis's or go-redis's, not the fence's
		return 0, false, fmt.Errorf("repair %s: %w", s.resource, err)
	}
	status, mark, err := parseRepairReply(reply)
	if err != nil {
		return 0, false, fmt.Errorf("fence: repair %s: %w", s.resource, err)
	}
	if status == repairDone {
		key := obs.Key{Raw: key, Hash: keyHash(key)}
		s.tel.FenceRepaired(ctx, obs.FenceRepair{Resource: s.resource, Key: key, Before: seen, After: mark})
	}
	return mark, status == repairDone, nil
}

// The statuses of repair.lua.
const (
	repairNothing = 0 // the mark is seen, not above the target
	repairDone    = 1 // set back to the target
	repairMoved   = 2 // the mark moved: it is not seen
)

// parseRepairReply reads {status, mark} from repair.lua ('0': no mark).
func parseRepairReply(reply []any) (status, mark int64, err error) {
	if len(reply) == 2 {
		st, isInt := reply[0].(int64)
		m, isStr := reply[1].(string)
		if isInt && isStr && st >= repairNothing && st <= repairMoved {
			if m == "0" && st == repairMoved {
				return st, 0, nil
			}
			if mark, err = storedMark(m); err != nil {
				return 0, 0, err
			}
			return st, mark, nil
		}
	}
	return 0, 0, fmt.Errorf("unexpected reply %v", reply)
}

// Mark returns key's high-water mark, 0 when it has none: what an operator
// compares with the fences minted for the key (lockwatch fence). It only
// reads, like Read, and reads no value.
func (s *RedisStore) Mark(ctx context.Context, key string) (int64, error) {
	m, err := s.client.HGet(ctx, s.redisKey(key), "fence").Result()
	switch {
	case errors.Is(err, redis.Nil):
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("read %s: %w", s.resource, err)
	}
	n, err := storedMark(m)
	if err != nil {
		return 0, fmt.Errorf("fence: read %s: %w", s.resource, err)
	}
	return n, nil
}

// storedMark reads a mark as the scripts store it: a canonical decimal, 1
// to 2^63-1, said as a stored mark rather than as a token.
func storedMark(m string) (int64, error) {
	n, err := parseFence(m)
	if err != nil {
		return 0, fmt.Errorf("stored mark %q is not a canonical fence", m)
	}
	return n, nil
}
