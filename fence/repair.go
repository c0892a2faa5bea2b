package fence

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/lockwatch/lockwatch/internal/obs"
)

// The repair script, as scripts.go builds the others: tokens.lua's
// comparison in front of it, run by EVALSHA with EVAL as the fallback.
var (
	//go:embed scripts/repair.lua
	repairSrc string

	repairScript = redis.NewScript(tokensSrc + repairSrc)
)

// Repair sets key's high-water mark back when a token that no lease carried
// moved it ahead of every lease: to target = max(floor, the store's Redis
// TIME in microseconds + its MaxSkew), in one step, and only if the mark is still seen
// (the mark the caller inspected) and above target. It returns the mark
// after the call and whether it was set back: when it was not, mark is the
// key's current one (0 for none), still seen if it was not above target,
// another if it moved since it was inspected (inspect again).
//
// It is an operator's repair, not part of writing (lockwatch fence --force
// reads seen with Mark and floor from the lease's fence record, and calls
// it). A mark above every fence minted for its key was set by a token that
// no lease carried: a plain or forged one admitted before the checks of
// Token existed, or under too large a skew. It bricks the key: every
// holder's write is refused as stale until minting passes it, and fences
// follow Redis TIME in microseconds, so a mark far ahead is months or
// years of refusals.
//
// Why (model/lease.pml's operator, scenarios REPAIR and RLOSS): every
// fence minted before the repair is at most target, since fences are
// max(last + 1, TIME) on the leases' Redis, whose clock is at most MaxSkew
// ahead of the store's (the clock bound's assumption), and floor was read
// after them; so no lease minted before the repair can write after a newer
// one, even when the fence record was lost. A mark that moved since it was
// inspected is left alone, and floor is the fence record's: both guard
// what the model assumes away (a lease's write accepted meanwhile when
// clocks disagree by more, fences ahead of TIME after a failover). The holders of fences up to target stay refused (Write is strict),
// and so are leases acquired within MaxSkew after the repair; the next
// lease after that mints above target.
//
// A repair that set the mark back is counted in lockwatch.fence.repairs
// and logged at Warn with the mark before (one that changed nothing is
// neither): see WithTelemetry. The value stays as it is: the next accepted
// write replaces it.
//
// seen and floor must be positive (ErrMalformed otherwise, and Redis is
// not called). A stored mark that is not a canonical fence is an error
// starting "fence:", and nothing changes. Any other error is Redis
// failing, and the mark may or may not have been set back: Mark tells.
//
// The SQL tables have no Repair: there the repair is one statement, run in
// the database, with the TableConfig's names (PostgreSQL; MySQL reads its
// clock as the tables' bound does, SYSDATE(6)):
//
//	UPDATE <Table> SET <FenceColumn> = GREATEST(<floor>, (extract(epoch FROM clock_timestamp()) * 1000000)::bigint + <skew µs>)
//	 WHERE <KeyColumn> = <key> AND <FenceColumn> = <seen>
//	   AND <FenceColumn> > GREATEST(<floor>, (extract(epoch FROM clock_timestamp()) * 1000000)::bigint + <skew µs>)
func (s *RedisStore) Repair(ctx context.Context, key string, seen, floor int64) (mark int64, repaired bool, err error) {
	if seen <= 0 || floor <= 0 {
		return 0, false, fmt.Errorf("%w: repair %s: seen %d and floor %d must be positive", ErrMalformed, s.resource, seen, floor)
	}
	reply, err := repairScript.Run(ctx, s.client, []string{s.redisKey(key)},
		strconv.FormatInt(seen, 10), strconv.FormatInt(floor, 10), strconv.FormatInt(s.policy.maxSkew.Microseconds(), 10)).Slice()
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
	repairMoved   = 2 // the mark is no longer seen
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

// Mark returns key's high-water mark: the number of the newest token the
// key accepted, 0 when it has none. It only reads, like Read, and reads no
// value: it is what an operator compares with the fences minted for the
// key (lockwatch fence).
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
