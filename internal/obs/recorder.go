package obs

import (
	"context"
	"log/slog"
	"sync"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// Recorder records lockwatch's signals: the instruments of Metrics, the
// lease.acquire and fence.check spans, span events and Warn logs. It is
// what a telemetry.Telemetry holds, safe for concurrent use. The zero
// value is not usable; call New.
type Recorder struct {
	tracer  trace.Tracer
	logger  *slog.Logger
	rawKeys bool

	acquires        metric.Int64Counter
	acquireDuration metric.Float64Histogram
	resolutions     metric.Int64Counter
	renewals        metric.Int64Counter
	renewalDuration metric.Float64Histogram
	losses          metric.Int64Counter
	commits         metric.Int64Counter
	commitRemaining metric.Float64Histogram
	cancellation    metric.Float64Histogram
	overrunning     metric.Int64UpDownCounter
	lateCompletions metric.Int64Counter
	fenceChecks     metric.Int64Counter
	fenceRejections metric.Int64Counter
	fenceRepairs    metric.Int64Counter
	active          metric.Int64UpDownCounter
	holdDuration    metric.Float64Histogram
	releases        metric.Int64Counter
	waiting         metric.Int64UpDownCounter
	waitDuration    metric.Float64Histogram
	forceReleases   metric.Int64Counter
	elections
	permits

	mu    sync.RWMutex
	attrs map[attrKey]*attrOpts
	known map[attrKey]bool // lock names and resources whose series exist
	terms map[string]int64 // each election's newest term, as its gauge holds it
	limit map[string]int64 // each semaphore's limit, as its gauge holds it
}

// elections are the instruments of the election side.
type elections struct {
	leader         metric.Int64UpDownCounter
	termChanges    metric.Int64Counter
	term           metric.Int64UpDownCounter
	leadership     metric.Float64Histogram
	leaderless     metric.Float64Histogram
	electionLosses metric.Int64Counter
	electionLate   metric.Int64Counter
}

// New creates the instruments on the configured providers. Errors from the
// providers (which the API only reports for invalid names) go to the global
// OpenTelemetry error handler, as in the OTel contrib instrumentations; the
// instrument concerned then records nothing.
func New(c Config) *Recorder {
	if c.TracerProvider == nil {
		c.TracerProvider = otel.GetTracerProvider()
	}
	if c.MeterProvider == nil {
		c.MeterProvider = otel.GetMeterProvider()
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	meter := c.MeterProvider.Meter(ScopeName, metric.WithInstrumentationVersion(Version))
	t := &Recorder{
		tracer:  c.TracerProvider.Tracer(ScopeName, trace.WithInstrumentationVersion(Version)),
		logger:  c.Logger,
		rawKeys: c.RawKeys,
		attrs:   make(map[attrKey]*attrOpts),
		known:   make(map[attrKey]bool),
		terms:   make(map[string]int64),
		limit:   make(map[string]int64),
	}
	t.create(meter)
	return t
}

// create creates the instruments of Metrics on meter.
func (t *Recorder) create(meter metric.Meter) {
	m := instruments{meter}
	counter, updown, histogram := m.counter, m.updown, m.histogram
	t.acquires = counter(LeaseAcquires)
	t.acquireDuration = histogram(LeaseAcquireDuration)
	t.resolutions = counter(LeaseUnknownResolutions)
	t.renewals = counter(LeaseRenewals)
	t.renewalDuration = histogram(LeaseRenewalDuration)
	t.losses = counter(LeaseLosses)
	t.commits = counter(LeaseCommits)
	t.commitRemaining = histogram(LeaseCommitRemaining)
	t.cancellation = histogram(LeaseCancellationLatency)
	t.overrunning = updown(LeaseOverrunning)
	t.lateCompletions = counter(LeaseLateCompletions)
	t.fenceChecks = counter(FenceChecks)
	t.fenceRejections = counter(FenceRejections)
	t.fenceRepairs = counter(FenceRepairs)
	t.active = updown(LeaseActive)
	t.holdDuration = histogram(LeaseHoldDuration)
	t.releases = counter(LeaseReleases)
	t.waiting = updown(LeaseWaiting)
	t.waitDuration = histogram(LeaseWaitDuration)
	t.forceReleases = counter(LeaseForceReleases)
	t.leader = updown(ElectionLeader)
	t.termChanges = counter(ElectionTermChanges)
	t.term = updown(ElectionTerm)
	t.leadership = histogram(ElectionLeadershipDuration)
	t.leaderless = histogram(ElectionLeaderlessDuration)
	t.electionLosses = counter(ElectionLosses)
	t.electionLate = counter(ElectionLateCompletions)
	t.permitsHeld = updown(PermitsHeld)
	t.permitsLimit = updown(PermitsLimit)
	t.permitsWaiting = updown(PermitsWaiting)
	t.permitsAcquires = counter(PermitsAcquires)
	t.permitsWait = histogram(PermitsWaitDuration)
	t.permitsLosses = counter(PermitsLosses)
}

// instruments creates instruments on a meter from their entries in Metrics.
type instruments struct{ meter metric.Meter }

func (i instruments) counter(name string) metric.Int64Counter {
	m := metricByName(name)
	c, err := i.meter.Int64Counter(m.Name, metric.WithUnit(m.Unit), metric.WithDescription(m.Description))
	handle(err)
	return c
}

func (i instruments) updown(name string) metric.Int64UpDownCounter {
	m := metricByName(name)
	c, err := i.meter.Int64UpDownCounter(m.Name, metric.WithUnit(m.Unit), metric.WithDescription(m.Description))
	handle(err)
	return c
}

func (i instruments) histogram(name string) metric.Float64Histogram {
	m := metricByName(name)
	h, err := i.meter.Float64Histogram(m.Name, metric.WithUnit(m.Unit), metric.WithDescription(m.Description),
		metric.WithExplicitBucketBoundaries(m.Buckets...))
	handle(err)
	return h
}

// RawKeys tells whether the caller's keys may be shown (Config.RawKeys), not
// only their hashes: on spans, and on the live page of a Locker's leases.
func (t *Recorder) RawKeys() bool { return t.rawKeys }

// Config is where a Recorder sends its signals; nil fields mean the
// global providers and slog.Default().
type Config struct {
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider
	Logger         *slog.Logger
	RawKeys        bool // the raw key on spans, not only its hash
}

// TelemetryRecorder returns the Recorder inside t, a *telemetry.Telemetry:
// nil for a nil or zero one. Package telemetry sets it at init: its type
// keeps the Recorder in an unexported field, so that no internal type shows
// in its API, and this package cannot name it (telemetry imports obs).
var TelemetryRecorder func(t any) *Recorder

// RecorderOf is TelemetryRecorder(t), and nil before package telemetry
// is initialised (no Telemetry exists then).
func RecorderOf(t any) *Recorder {
	if TelemetryRecorder == nil {
		return nil
	}
	return TelemetryRecorder(t)
}

// LeaseRecorder returns the Recorder of the lease whose context ctx is (or
// derives from), or nil: the middleware reports on the work under a lease
// through the lease's own telemetry. Package lease sets it at init, the one
// registration of this package: lease imports this package, which therefore
// cannot name a lease.
var LeaseRecorder func(ctx context.Context) *Recorder

// handle passes a provider's error to the global OpenTelemetry handler.
func handle(err error) {
	if err != nil {
		otel.Handle(err)
	}
}

// attrKey names one attribute set: the lock name (or resource) and at most
// one closed-set attribute.
type attrKey struct {
	firstKey, first string
	key, value      string
}

// attrOpts are the measurement options of one attribute set, built once:
// recording on a hot path then allocates nothing for attributes.
type attrOpts struct {
	add    []metric.AddOption
	record []metric.RecordOption
}

// opts returns the options for {firstKey: first, key: value} (key may be
// empty for a set of one attribute).
func (t *Recorder) opts(firstKey, first, key, value string) *attrOpts {
	k := attrKey{firstKey, first, key, value}
	t.mu.RLock()
	o := t.attrs[k]
	t.mu.RUnlock()
	if o != nil {
		return o
	}
	kvs := []attribute.KeyValue{attribute.String(firstKey, first)}
	if key != "" {
		kvs = append(kvs, attribute.String(key, value))
	}
	set := metric.WithAttributeSet(attribute.NewSet(kvs...))
	o = &attrOpts{add: []metric.AddOption{set}, record: []metric.RecordOption{set}}
	t.mu.Lock()
	t.attrs[k] = o
	t.mu.Unlock()
	// A lock name or resource is new at the latest when its first set is
	// built: only this slow path introduces it, the hot path stays one lookup.
	t.introduce(firstKey, first)
	return o
}

// lock returns the options for a lock name and one more attribute.
func (t *Recorder) lock(name, key, value string) *attrOpts {
	return t.opts(AttrLockName, name, key, value)
}

// resource returns the options for a fenced resource and one more attribute.
func (t *Recorder) resource(name, key, value string) *attrOpts {
	return t.opts(AttrResource, name, key, value)
}

// introduce creates every counter series of a lock name, resource,
// election or semaphore at zero the first time it is seen (and does
// nothing after that). A counter series born at its first event has no
// earlier sample, so rate() and increase() would miss that event: the
// first stale write a resource ever rejected would page nobody.
func (t *Recorder) introduce(firstKey, name string) {
	k := attrKey{firstKey: firstKey, first: name}
	t.mu.RLock()
	seen := t.known[k]
	t.mu.RUnlock()
	if seen {
		return
	}
	t.mu.Lock()
	seen, t.known[k] = t.known[k], true
	t.mu.Unlock()
	if seen {
		return
	}
	ctx := context.Background()
	one := t.opts(firstKey, name, "", "").add
	result, reason := k, k
	result.key, reason.key = AttrResult, AttrReason
	switch firstKey {
	case AttrResource:
		zero(t, t.fenceChecks, result, FenceResults)
		t.fenceRejections.Add(ctx, 0, one...)
		t.fenceRepairs.Add(ctx, 0, one...)
		return
	case AttrElection:
		zero(t, t.termChanges, reason, TermChanges)
		zero(t, t.electionLosses, reason, LossReasons)
		t.electionLate.Add(ctx, 0, one...)
		t.term.Add(ctx, 0, one...)
		return
	case AttrSemaphore:
		t.introduceSemaphore(result, reason)
		return
	}
	zero(t, t.acquires, result, AcquireResults)
	zero(t, t.resolutions, result, ResolutionResults)
	zero(t, t.renewals, result, RenewalResults)
	zero(t, t.losses, reason, LossReasons)
	zero(t, t.commits, result, CommitResults)
	zero(t, t.releases, result, ReleaseResults)
	zero(t, t.forceReleases, result, ReleaseResults)
	t.lateCompletions.Add(ctx, 0, one...)
	t.active.Add(ctx, 0, one...)
	t.overrunning.Add(ctx, 0, one...)
	t.waiting.Add(ctx, 0, one...)
}

// zero creates c's series of set at zero, set.value taking every value of a
// closed set.
func zero[V ~string](t *Recorder, c metric.Int64Counter, set attrKey, values []V) {
	for _, v := range values {
		c.Add(context.Background(), 0, t.opts(set.firstKey, set.first, set.key, string(v)).add...)
	}
}
