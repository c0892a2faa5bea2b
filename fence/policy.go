package fence

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/lockwatch/lockwatch/internal/obs"
)

// policy is what a store checks of a token before it compares the token's
// fence with the mark (Token says why; SECURITY.md lists the checks for
// users). The checks that need no stored state run here, in Go, before the
// store is called; the clock bound needs the store's own clock, so it runs
// in the store's script or statement: bounded says when it applies.
type policy struct {
	lockNamespace string        // the Lockers' lease namespace, for ScopeOf
	secrets       *Secrets      // nil: tokens are not signed
	plain         bool          // plain tokens are admitted (unsigned, bounded)
	maxSkew       time.Duration // how far ahead of the store's clock an unsigned fence may be
}

// The defaults of the stores' options.
const (
	defaultLockNamespace = "lockwatch"      // lease.WithNamespace's default
	defaultMaxSkew       = 10 * time.Second // why 10 s: SECURITY.md, "The clock bound, per store"
)

func newPolicy() policy {
	return policy{lockNamespace: defaultLockNamespace, maxSkew: defaultMaxSkew}
}

func (p *policy) validate() error {
	switch {
	case p.maxSkew <= 0:
		return fmt.Errorf("max skew must be positive, got %v", p.maxSkew)
	case p.plain && p.secrets != nil:
		// Plain tokens are for a migration, which ends before secrets begin.
		return errors.New("plain tokens and secrets exclude each other: a plain number cannot be signed")
	}
	return validName("lock namespace", p.lockNamespace)
}

// check refuses a token the store cannot trust for lockKey, before any
// comparison with the mark. bounded: the token is unsigned, so its fence
// must also be at most the store's clock plus maxSkew.
func (p *policy) check(lockKey string, t Token) (bounded bool, err error) {
	switch {
	case t.Fence <= 0:
		return false, fmt.Errorf("%w: fence %d is not positive", ErrMalformed, t.Fence)
	case t.IsPlain() && !p.plain:
		return false, fmt.Errorf("%w: fence %d (send the lease's token, or allow plain tokens)", ErrUnscoped, t.Fence)
	case t.IsPlain():
		return true, nil
	}
	if p.secrets != nil {
		if err := p.secrets.verify(t); err != nil {
			return false, err
		}
	}
	if t.Scope != ScopeOf(p.lockNamespace, lockKey) {
		return false, fmt.Errorf("%w: fence %d is not a token of this key in lease namespace %q", ErrForeign, t.Fence, p.lockNamespace)
	}
	return p.secrets == nil, nil
}

// skewArg is the clock bound's argument to the stores' scripts and
// statements: the allowed skew in microseconds, or "" for a signed token.
func (p *policy) skewArg(bounded bool) string {
	if !bounded {
		return ""
	}
	return strconv.FormatInt(p.maxSkew.Microseconds(), 10)
}

// refusal is the fence check result of a token refusal.
func refusal(err error) (obs.FenceResult, bool) {
	switch {
	case errors.Is(err, ErrForeign):
		return obs.FenceForeign, true
	case errors.Is(err, ErrForged):
		return obs.FenceForged, true
	case errors.Is(err, ErrAhead):
		return obs.FenceAhead, true
	case errors.Is(err, ErrUnscoped):
		return obs.FenceUnscoped, true
	}
	return "", false
}
