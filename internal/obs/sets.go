package obs

// The closed sets of metric attribute values. Each is declared here once:
// the lease package reports these values, the recorder creates every series
// of a lock name at zero from the lists (so that rate() and increase() see
// the first event of each), and the dashboards and alerts name them. A test
// checks that each list holds every constant of its type.

// AcquireResult is the result attribute of lockwatch.lease.acquires.
type AcquireResult string

// Acquire results.
const (
	AcquireAcquired  AcquireResult = "acquired"
	AcquireContended AcquireResult = "contended"
	AcquireUnknown   AcquireResult = "unknown"
	// AcquireError is a definite failure, nothing sent or nothing
	// written: a bad option, a closed Locker, the deadline passed while
	// queued, a refusal by the script.
	AcquireError AcquireResult = "error"
)

// ResolutionResult is the result attribute of
// lockwatch.lease.unknown.resolutions: how the clean-up of an unknown
// acquire ended.
type ResolutionResult string

// Resolution results.
const (
	// ResolutionReleased: the acquire had taken the key; the conditional
	// release removed it and barred its owner token.
	ResolutionReleased ResolutionResult = "released"
	// ResolutionAbsent: the key did not hold the acquire's token; the
	// token is barred, so a late copy of the acquire cannot take the key.
	ResolutionAbsent ResolutionResult = "absent"
	// ResolutionUnresolved: the clean-up failed too; the key may be held
	// until its TTL runs out.
	ResolutionUnresolved ResolutionResult = "unresolved"
)

// RenewalResult is the result attribute of lockwatch.lease.renewals.
type RenewalResult string

// Renewal results.
const (
	RenewalRenewed  RenewalResult = "renewed"
	RenewalRejected RenewalResult = "rejected"
	RenewalUnknown  RenewalResult = "unknown"
)

// LossReason is the reason attribute of lockwatch.lease.losses, and
// lease.LossReason.
type LossReason string

// Loss reasons: what each means is written once, at lease's re-export of
// these constants, where users read it.
const (
	LossRenewalRejected LossReason = "renewal_rejected"
	LossForceReleased   LossReason = "force_released"
	LossRenewalUnknown  LossReason = "renewal_unknown"
	LossDeadline        LossReason = "deadline"
	LossMaxHold         LossReason = "max_hold"
	LossClosed          LossReason = "closed"
	LossYielded         LossReason = "yielded"
)

// CommitResult is the result attribute of lockwatch.lease.commits.
type CommitResult string

// Commit results: what became of the final write. Exactly one per Commit
// call, once fn has returned (or at once when fn does not run).
const (
	// CommitCommitted: fn ran and returned nil.
	CommitCommitted CommitResult = "committed"
	// CommitNearExpiry: fn ran below the warning threshold and returned
	// nil.
	CommitNearExpiry CommitResult = "near_expiry"
	// CommitRefused: fn did not run (the lease was lost or released, or
	// below the hard margin).
	CommitRefused CommitResult = "refused"
	// CommitStale: fn ran and its write was rejected by a fence
	// (errors.Is fence.ErrStale): a stale write stopped.
	CommitStale CommitResult = "stale"
	// CommitFailed: fn ran and returned any other error, or panicked: the
	// write may or may not have taken effect.
	CommitFailed CommitResult = "failed"
)

// ReleaseResult is the result attribute of lockwatch.lease.releases.
type ReleaseResult string

// Release results.
const (
	ReleaseReleased ReleaseResult = "released"
	ReleaseNotHeld  ReleaseResult = "not_held"
	ReleaseUnknown  ReleaseResult = "unknown"
)

// WaitResult is the result attribute of lockwatch.lease.wait.duration: how
// a wait for a contended lease (lease.Config.Wait) ended. A wait starts
// with the first contended answer that Acquire backs off from, and ends
// when Acquire returns.
type WaitResult string

// Wait results.
const (
	// WaitAcquired: a later attempt took the lease.
	WaitAcquired WaitResult = "acquired"
	// WaitTimedOut: the wait's bound (Config.Wait) passed with the key still
	// held; Acquire returned ErrNotAcquired.
	WaitTimedOut WaitResult = "timed_out"
	// WaitCancelled: the caller's context ended (cancelled, or its
	// deadline passed) before the bound.
	WaitCancelled WaitResult = "cancelled"
	// WaitUnknown: an attempt's result is unknown (ErrUnknown); the work
	// must not run.
	WaitUnknown WaitResult = "unknown"
	// WaitError: the wait could not go on: the Locker was closed, an
	// attempt could not be sent within the acquire timeout, the script
	// refused, or a panic went through Acquire.
	WaitError WaitResult = "error"
)

// FenceResult is the result attribute of lockwatch.fence.checks.
type FenceResult string

// Fence check results.
const (
	FenceAccepted FenceResult = "accepted"
	FenceRejected FenceResult = "rejected"
	// FenceLate: a write a guard refused because its request's handler
	// had returned (middleware.Guarded): no token was compared.
	FenceLate FenceResult = "late"
	// The token refusals (fence.ErrForeign, ErrForged, ErrAhead,
	// ErrUnscoped, ErrMalformed at a guard): a token the resource cannot
	// trust, refused before its mark is compared, so never a stale write.
	FenceForeign   FenceResult = "foreign"
	FenceForged    FenceResult = "forged"
	FenceAhead     FenceResult = "ahead"
	FenceUnscoped  FenceResult = "unscoped"
	FenceMalformed FenceResult = "malformed"
)

// TermChange is the reason attribute of lockwatch.election.term_changes:
// every term counts once when it starts and once when it ends.
type TermChange string

// Term changes.
const (
	TermStarted TermChange = "started"
	// TermResigned: the leader released a live term (its function
	// returned, or Run's context ended).
	TermResigned TermChange = "resigned"
	// TermLost: the term's lease was lost (lockwatch.election.losses
	// says why).
	TermLost TermChange = "lost"
)

// The sets, in the order dashboards list them.
var (
	AcquireResults    = []AcquireResult{AcquireAcquired, AcquireContended, AcquireUnknown, AcquireError}
	ResolutionResults = []ResolutionResult{ResolutionReleased, ResolutionAbsent, ResolutionUnresolved}
	RenewalResults    = []RenewalResult{RenewalRenewed, RenewalRejected, RenewalUnknown}
	LossReasons       = []LossReason{LossRenewalRejected, LossForceReleased, LossRenewalUnknown, LossDeadline, LossMaxHold, LossClosed, LossYielded}
	CommitResults     = []CommitResult{CommitCommitted, CommitNearExpiry, CommitRefused, CommitStale, CommitFailed}
	ReleaseResults    = []ReleaseResult{ReleaseReleased, ReleaseNotHeld, ReleaseUnknown}
	WaitResults       = []WaitResult{WaitAcquired, WaitTimedOut, WaitCancelled, WaitUnknown, WaitError}
	TermChanges       = []TermChange{TermStarted, TermResigned, TermLost}
	FenceResults      = []FenceResult{FenceAccepted, FenceRejected, FenceLate, FenceForeign, FenceForged, FenceAhead, FenceUnscoped, FenceMalformed}
)
