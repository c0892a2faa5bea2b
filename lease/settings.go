package lease

import (
	"time"

	"github.com/lockwatch/lockwatch/internal/obs"
)

// settings are the resolved, validated timings one lease runs with. They are
// computed once per Locker (and once per acquire that passes options).
type settings struct {
	config
	ttlMs        int64
	drift        time.Duration // Redlock's clock-drift allowance: TTL/100 + 2ms
	renewEvery   time.Duration // TTL/3
	renewSlack   time.Duration // how early a renewal may go to share a batch
	retentionMs  int64
	ttlArg       any // ttlMs and retentionMs as script arguments, boxed once
	retentionArg any
	ackTimeoutMs int64
	rec          *obs.Recorder // tel's
}

func (c config) settings() (*settings, error) {
	s := &settings{config: c, rec: (*obs.Telemetry)(c.tel).Recorder()}
	s.ttl = c.ttl.Truncate(time.Millisecond)
	switch {
	case s.ttl < minTTL:
		return nil, invalidf("TTL %v is below the minimum %v", c.ttl, minTTL)
	case s.ttl > forever:
		return nil, invalidf("TTL %v is above the maximum %v", c.ttl, forever)
	}
	if err := validNamespace(c.namespace); err != nil {
		return nil, err
	}
	if c.name == "" {
		return nil, invalidf("empty lock name")
	}
	s.ttlMs = s.ttl.Milliseconds()
	s.drift = s.ttl/100 + 2*time.Millisecond
	s.renewEvery = s.ttl / 3
	s.renewSlack = s.renewEvery / 4
	if !c.safetySet {
		s.safety = s.ttl / 10
	}
	if !c.hardSet {
		s.commitHard, s.commitWarn = s.ttl/20, s.ttl/4
	}
	if c.renewalTimeout == 0 {
		s.renewalTimeout = s.ttl / 5
	}
	if c.acquireTimeout == 0 {
		s.acquireTimeout = s.ttl / 5
	}
	if c.releaseTimeout == 0 {
		s.releaseTimeout = s.ttl / 5
	}
	for _, d := range []*time.Duration{&s.wait, &s.maxHold, &s.acquireTimeout, &s.releaseTimeout, &s.ackTimeout, &s.fenceRetention, &s.commitTimeout} {
		*d = min(*d, forever)
	}
	s.fenceRetention = s.fenceRetention.Truncate(time.Millisecond)
	s.retentionMs = s.fenceRetention.Milliseconds()
	s.ackTimeoutMs = s.ackTimeout.Milliseconds()
	s.ttlArg, s.retentionArg = s.ttlMs, s.retentionMs

	// No sum of two option values below: one may be near the largest
	// Duration, and the sum would wrap.
	switch {
	case s.safety < 0:
		return nil, invalidf("negative safety margin %v", s.safety)
	case s.safety >= s.ttl:
		return nil, invalidf("safety margin %v not below the TTL %v", s.safety, s.ttl)
	case s.renewalTimeout <= 0:
		return nil, invalidf("renewal timeout %v must be positive", s.renewalTimeout)
	case s.acquireTimeout <= 0:
		return nil, invalidf("acquire timeout %v must be positive", s.acquireTimeout)
	case s.releaseTimeout <= 0:
		return nil, invalidf("release timeout %v must be positive", s.releaseTimeout)
	case s.commitTimeout <= 0:
		return nil, invalidf("commit timeout %v must be positive", s.commitTimeout)
	case s.renewalTimeout > s.ttl-s.drift-s.safety-s.renewEvery:
		return nil, invalidf("TTL %v too short for renewal every %v, renewal timeout %v, drift %v and safety margin %v: a renewal sent on time could not be confirmed before the cancel point",
			s.ttl, s.renewEvery, s.renewalTimeout, s.drift, s.safety)
	case s.commitHard < 0 || s.commitWarn < s.commitHard || s.commitWarn > s.ttl:
		return nil, invalidf("commit margins hard %v, warn %v: need 0 <= hard <= warn <= TTL %v", s.commitHard, s.commitWarn, s.ttl)
	case s.maxHold < 0:
		return nil, invalidf("negative max hold %v", s.maxHold)
	case s.wait < 0:
		return nil, invalidf("negative wait %v", s.wait)
	case s.backoffMin <= 0 || s.backoffMax < s.backoffMin:
		return nil, invalidf("backoff bounds %v..%v: need 0 < min <= max", s.backoffMin, s.backoffMax)
	case s.fenceRetention < s.ttl:
		return nil, invalidf("fence retention %v shorter than the TTL %v", s.fenceRetention, s.ttl)
	case s.ackReplicas < 0:
		return nil, invalidf("negative replica count %d", s.ackReplicas)
	case s.ackReplicas > 0 && s.ackTimeoutMs <= 0:
		return nil, invalidf("replication ack needs a timeout of at least 1ms, got %v", s.ackTimeout)
	}
	return s, nil
}

// cancelAfter is how long after a confirmed send the lease is cancelled if
// no later renewal is confirmed: the key cannot expire in Redis before
// send + TTL, the drift allowance covers clock-rate differences, and the
// safety margin leaves the work time to stop.
func (s *settings) cancelAfter() time.Duration { return s.ttl - s.drift - s.safety }
