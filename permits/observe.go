package permits

import (
	"context"
	"errors"

	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/lockwatch/lockwatch/lease"
	"github.com/lockwatch/lockwatch/telemetry"
)

func recorderOf(t *telemetry.Telemetry) *obs.Recorder {
	return (*obs.Telemetry)(t).Recorder()
}

// observe records the Acquire's result, and watches the permit it took.
func (s *Semaphore) observe(ctx context.Context, ev *obs.PermitAcquire, p *Permit, err error) {
	s.rec.PermitAcquired(ctx, ev, resultOf(err))
	if p != nil {
		p.watch(ctx)
	}
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
