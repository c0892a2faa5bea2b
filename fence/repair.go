package fence

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// The repair script, as scripts.go builds the others: tokens.lua's
// comparison in front of it, run by EVALSHA with EVAL as the fallback.
var (
	//go:embed scripts/repair.lua
	repairSrc string

	repairScript = redis.NewScript(tokensSrc + repairSrc)
)

// Repair sets key's high-water mark back to minted, the newest fence minted
// for the lock key that key's leases hold, if the mark is above it, in one
// step; a mark at or below minted is left as it is. It returns the mark
// before: above minted when it was set back, and 0 when the key has no mark.
//
// It is an operator's repair, not part of writing (lockwatch fence --force
// reads minted from the lease's fence record and calls it). A mark above
// every fence minted for its key was set by a token that no lease carried:
// a bad or forged one, or a number from elsewhere. Such a mark bricks the
// key: every holder's write is refused as stale until minting passes it,
// and fences follow Redis TIME in microseconds, so a mark far ahead is
// months or years of refusals. Setting it back to minted makes the next
// lease's fence, which is larger, the first accepted; the holder of minted
// itself stays refused by Write (strict), admitted by Admit.
//
// minted must be at least the newest fence minted for key when the repair
// runs: a mark set below the fence of a lease whose write it accepted lets
// older leases' writes through again after that one (a mark only grows;
// Repair is the one way to lower it). A mark still ahead of Redis TIME
// cannot have accepted a lease minted since minted was read: those fences
// follow the clock, and are below it.
//
// A repair that set the mark back is counted in lockwatch.fence.repairs
// and logged at Warn with the mark before (one that changed nothing is
// neither): see WithTelemetry. The value stays as it is: the next accepted
// write replaces it.
//
// minted must be positive (ErrMalformed otherwise, and Redis is not
// called). A stored mark that is not a canonical fence is an error starting
// "fence:", and nothing changes. Any other error is Redis failing, and the
// mark may or may not have been set back: Repair can be called again.
//
// The SQL tables have no Repair: there the repair is one statement, run in
// the database, with the TableConfig's names and the minted fence:
//
//	UPDATE <Table> SET <FenceColumn> = <minted> WHERE <KeyColumn> = <key> AND <FenceColumn> > <minted>
func (s *RedisStore) Repair(ctx context.Context, key string, minted int64) (before int64, err error) {
	if minted <= 0 {
		return 0, fmt.Errorf("%w: repair %s: minted fence %d is not positive", ErrMalformed, s.resource, minted)
	}
	reply, err := repairScript.Run(ctx, s.client, []string{s.redisKey(key)}, strconv.FormatInt(minted, 10)).Slice()
	switch {
	case isScriptRefusal(err):
		return 0, fmt.Errorf("fence: repair %s: %w", s.resource, err)
	case err != nil: // Redis's or go-redis's, not the fence's
		return 0, fmt.Errorf("repair %s: %w", s.resource, err)
	}
	repaired, before, err := parseRepairReply(reply)
	if err != nil {
		return 0, fmt.Errorf("fence: repair %s: %w", s.resource, err)
	}
	if repaired {
		s.tel.FenceRepaired(ctx, s.resource, key, keyHash(key), before, minted)
	}
	return before, nil
}

// parseRepairReply reads {status, mark} from repair.lua: status 1 when the
// mark was set back, mark the one before ('0' for none).
func parseRepairReply(reply []any) (repaired bool, before int64, err error) {
	if len(reply) == 2 {
		status, isInt := reply[0].(int64)
		m, isStr := reply[1].(string)
		if isInt && isStr && (status == 0 || status == 1) {
			if m == "0" && status == 0 {
				return false, 0, nil
			}
			if before, err = storedMark(m); err != nil {
				return false, 0, err
			}
			return status == 1, before, nil
		}
	}
	return false, 0, fmt.Errorf("unexpected reply %v", reply)
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
// to 2^63-1 (no sign, no leading zeros), which is what formatting its
// number gives back.
func storedMark(m string) (int64, error) {
	n, err := strconv.ParseInt(m, 10, 64)
	if err != nil || n <= 0 || strconv.FormatInt(n, 10) != m {
		return 0, fmt.Errorf("stored mark %q is not a canonical fence", m)
	}
	return n, nil
}
