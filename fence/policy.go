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

// The defaults of the stores' settings.
const (
	defaultLockNamespace = "lockwatch"      // lease.Config.Namespace's default
	defaultMaxSkew       = 10 * time.Second // why 10 s: SECURITY.md, "The clock bound, per store"
)

// newPolicy is the policy of a store's settings, zero values defaulted,
// or the error that names the setting at fault.
func newPolicy(lockNamespace string, secrets *Secrets, plain bool, maxSkew time.Duration) (policy, error) {
	p := policy{lockNamespace: lockNamespace, secrets: secrets, plain: plain, maxSkew: maxSkew}
	if p.lockNamespace == "" {
		p.lockNamespace = defaultLockNamespace
	}
	if p.maxSkew == 0 {
		p.maxSkew = defaultMaxSkew
	}
	switch {
	case p.maxSkew < 0:
		return policy{}, fmt.Errorf("MaxSkew must be positive, got %v", p.maxSkew)
	case p.plain && p.secrets != nil:
		// Plain tokens are for a migration, which ends before secrets begin.
		return policy{}, errors.New("PlainTokens and Secrets exclude each other: a plain number cannot be signed")
	}
	return p, validName("LockNamespace", p.lockNamespace)
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
		return false, fmt.Errorf("%w: fence %d is not a token of this key in lease namespace %q (the store's LockNamespace: the holders' lease.Config.Namespace must be it)", ErrForeign, t.Fence, p.lockNamespace)
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
