package permits

import (
	"context"
	"errors"
	"time"

	"github.com/lockwatch/lockwatch/internal/leaseslot"
	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/lockwatch/lockwatch/lease"
	"github.com/lockwatch/lockwatch/telemetry"
)

func recorderOf(t *telemetry.Telemetry) *obs.Recorder {
	return obs.RecorderOf(t)
}

// observe records the Acquire's result, and lists and watches the permit
// it took.
func (s *Semaphore) observe(ctx context.Context, ev *obs.PermitAcquire, p *Permit, err error) {
	s.rec.PermitAcquired(ctx, ev, resultOf(err))
	if p != nil {
		p.unlist = obs.HeldPermits.Add(p.held())
		p.watch(ctx)
	}
}

// held is the permit as the process's list of held permits shows it.
func (p *Permit) held() obs.HeldPermit {
	h := obs.HeldPermit{Semaphore: p.sem.cfg.Name, KeyHash: leaseslot.KeyHash(p.Lease),
		Namespace: leaseslot.Namespace(p.sem.fast), Index: p.Index,
		Fence: p.Fence(), Since: time.Now()}
	if p.sem.rec.RawKeys() {
		h.Key = p.sem.key
	}
	return h
}

// resultOf classifies an Acquire's error as the lease's results do.
func resultOf(err error) obs.AcquireResult {
	switch {
	case err == nil:
		return obs.AcquireAcquired
	case errors.Is(err, lease.ErrUnknown):
		return obs.AcquireUnknown
	case errors.Is(err, lease.ErrNotAcquired):
		return obs.AcquireContended
	}
	return obs.AcquireError
}
