package obs

// ScopeName is the instrumentation scope of every instrument and span:
// lockwatch's module path.
const ScopeName = "github.com/lockwatch/lockwatch"

// Instrument names (OpenTelemetry) and the Prometheus series the OTel
// Prometheus exporter makes of them with its default translation (dots to
// underscores, unit suffix, _total on counters). Dashboards and alerts
// query the Prom* names; a test scrapes a real exporter and checks every
// one of them.
const (
	LeaseAcquires                = "lockwatch.lease.acquires"
	PromLeaseAcquires            = "lockwatch_lease_acquires_total"
	LeaseAcquireDuration         = "lockwatch.lease.acquire.duration"
	PromLeaseAcquireDuration     = "lockwatch_lease_acquire_duration_seconds"
	LeaseUnknownResolutions      = "lockwatch.lease.unknown.resolutions"
	PromLeaseUnknownResolutions  = "lockwatch_lease_unknown_resolutions_total"
	LeaseRenewals                = "lockwatch.lease.renewals"
	PromLeaseRenewals            = "lockwatch_lease_renewals_total"
	LeaseRenewalDuration         = "lockwatch.lease.renewal.duration"
	PromLeaseRenewalDuration     = "lockwatch_lease_renewal_duration_seconds"
	LeaseLosses                  = "lockwatch.lease.losses"
	PromLeaseLosses              = "lockwatch_lease_losses_total"
	LeaseCommits                 = "lockwatch.lease.commits"
	PromLeaseCommits             = "lockwatch_lease_commits_total"
	LeaseCommitRemaining         = "lockwatch.lease.commit.remaining"
	PromLeaseCommitRemaining     = "lockwatch_lease_commit_remaining_seconds"
	LeaseCancellationLatency     = "lockwatch.lease.cancellation.latency"
	PromLeaseCancellationLatency = "lockwatch_lease_cancellation_latency_seconds"
	LeaseOverrunning             = "lockwatch.lease.overrunning"
	PromLeaseOverrunning         = "lockwatch_lease_overrunning"
	LeaseLateCompletions         = "lockwatch.lease.late_completions"
	PromLeaseLateCompletions     = "lockwatch_lease_late_completions_total"
	FenceChecks                  = "lockwatch.fence.checks"
	PromFenceChecks              = "lockwatch_fence_checks_total"
	FenceRejections              = "lockwatch.fence.rejections"
	PromFenceRejections          = "lockwatch_fence_rejections_total"
	FenceRepairs                 = "lockwatch.fence.repairs"
	PromFenceRepairs             = "lockwatch_fence_repairs_total"
	LeaseActive                  = "lockwatch.lease.active"
	PromLeaseActive              = "lockwatch_lease_active"
	LeaseHoldDuration            = "lockwatch.lease.hold.duration"
	PromLeaseHoldDuration        = "lockwatch_lease_hold_duration_seconds"
	LeaseReleases                = "lockwatch.lease.releases"
	PromLeaseReleases            = "lockwatch_lease_releases_total"
	LeaseWaiting                 = "lockwatch.lease.waiting"
	PromLeaseWaiting             = "lockwatch_lease_waiting"
	LeaseWaitDuration            = "lockwatch.lease.wait.duration"
	PromLeaseWaitDuration        = "lockwatch_lease_wait_duration_seconds"
	LeaseForceReleases           = "lockwatch.lease.force_releases"
	PromLeaseForceReleases       = "lockwatch_lease_force_releases_total"

	ElectionLeader                 = "lockwatch.election.leader"
	PromElectionLeader             = "lockwatch_election_leader"
	ElectionTermChanges            = "lockwatch.election.term_changes"
	PromElectionTermChanges        = "lockwatch_election_term_changes_total"
	ElectionTerm                   = "lockwatch.election.term"
	PromElectionTerm               = "lockwatch_election_term"
	ElectionLeadershipDuration     = "lockwatch.election.leadership.duration"
	PromElectionLeadershipDuration = "lockwatch_election_leadership_duration_seconds"
	ElectionLeaderlessDuration     = "lockwatch.election.leaderless.duration"
	PromElectionLeaderlessDuration = "lockwatch_election_leaderless_duration_seconds"
	ElectionLosses                 = "lockwatch.election.losses"
	PromElectionLosses             = "lockwatch_election_losses_total"
	ElectionLateCompletions        = "lockwatch.election.late_completions"
	PromElectionLateCompletions    = "lockwatch_election_late_completions_total"
	PermitsHeld                    = "lockwatch.permits.held"
	PromPermitsHeld                = "lockwatch_permits_held"
	PermitsLimit                   = "lockwatch.permits.limit"
	PromPermitsLimit               = "lockwatch_permits_limit"
	PermitsWaiting                 = "lockwatch.permits.waiting"
	PromPermitsWaiting             = "lockwatch_permits_waiting"
	PermitsAcquires                = "lockwatch.permits.acquires"
	PromPermitsAcquires            = "lockwatch_permits_acquires_total"
	PermitsWaitDuration            = "lockwatch.permits.wait.duration"
	PromPermitsWaitDuration        = "lockwatch_permits_wait_duration_seconds"
	PermitsLosses                  = "lockwatch.permits.losses"
	PromPermitsLosses              = "lockwatch_permits_losses_total"
)

// Attribute keys (on metrics and spans) and the Prometheus labels they
// become. Metric attributes take values from closed sets, plus the lock name,
// which the caller bounds (a route or method, never a per-request key).
const (
	AttrLockName  = "lock.name"
	LabelLockName = "lock_name"
	AttrResult    = "result"
	AttrReason    = "reason"
	AttrResource  = "resource"
	// AttrElection is an election's name (election.Config.Name), which
	// the service bounds as it bounds lock names.
	AttrElection = "election"
	// AttrCandidate is a candidate's identity, on the leader gauge only:
	// one series per election per process (election.Config.Identity).
	AttrCandidate = "candidate"
	// AttrSemaphore is a semaphore's name (permits.Config.Name), bounded
	// as lock names are.
	AttrSemaphore = "semaphore"
)

// Span-only attributes: high cardinality, never on a metric.
const (
	AttrKeyHash   = "lockwatch.key.hash" // the key's hash as used in Redis
	AttrKey       = "lockwatch.key"      // the raw key, only with Config.RawKeys
	AttrFence     = "lockwatch.fence"
	AttrHolder    = "lockwatch.holder" // a hash of a holder's owner token, never the token
	AttrAttempts  = "lockwatch.attempts"
	AttrRemaining = "lockwatch.remaining_seconds"
	AttrHighWater = "lockwatch.fence.high_water"
	AttrIdentity  = "lockwatch.election.identity"
	AttrLate      = "lockwatch.election.late"
	AttrLoss      = "lockwatch.election.loss_reason"
	// AttrLeaderless is the time without a leader before a term, when its
	// leader could tell it.
	AttrLeaderless = "lockwatch.election.leaderless_seconds"
)

// SpanResultNotFound is the result of a fence.check span whose row did not
// exist: no check was made, so no metric counts it.
const SpanResultNotFound = "not_found"

// Span and span-event names.
const (
	SpanAcquire         = "lease.acquire"
	SpanFenceCheck      = "fence.check"
	EventRenewalFailed  = "lease.renewal_failed"
	EventLost           = "lease.lost"
	EventCommit         = "lease.commit"
	EventLateCompletion = "lease.late_completion"
	SpanTerm            = "election.term"
)
