package debugpage

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/lockwatch/lockwatch/lease"
)

// view is one snapshot as the page and its JSON show it. The JSON names
// are the package's stable format (see the package doc).
type view struct {
	Taken  time.Time   `json:"taken"`
	Leases []leaseView `json:"leases"`
	Losses []lossView  `json:"losses"`
	// Elections are the process's, whichever Locker they campaign with.
	Elections []electionView `json:"elections"`
	// Permits are the process's held permits, whichever Locker they are
	// leases of.
	Permits []permitView `json:"permits"`

	rawKeys bool // some lease, loss or permit has its raw key: the page adds a column
}

type leaseView struct {
	Name          string `json:"name"`
	KeyHash       string `json:"key_hash"`
	Key           string `json:"key,omitempty"`
	Namespace     string `json:"namespace"`
	Permit        *int   `json:"permit,omitempty"`
	Fence         int64  `json:"fence"`
	Holder        string `json:"holder"`
	State         string `json:"state"`
	TTLMS         millis `json:"ttl_ms"`
	AgeMS         millis `json:"age_ms"`
	RemainingMS   millis `json:"remaining_ms"`
	Renewals      int    `json:"renewals"`
	LastRenewalMS millis `json:"last_renewal_ms"`
}

type lossView struct {
	Name          string           `json:"name"`
	KeyHash       string           `json:"key_hash"`
	Key           string           `json:"key,omitempty"`
	Namespace     string           `json:"namespace"`
	Permit        *int             `json:"permit,omitempty"`
	Fence         int64            `json:"fence"`
	Reason        lease.LossReason `json:"reason"`
	LostAt        time.Time        `json:"lost_at"`
	HeldMS        millis           `json:"held_ms"`
	Renewals      int              `json:"renewals"`
	LastRenewalMS millis           `json:"last_renewal_ms"`
}

// electionView is a candidate running in the process: whether it leads,
// its term (the one it leads, else the last it led; 0 before the first),
// and since when it leads, or campaigns.
type electionView struct {
	Election string    `json:"election"`
	Identity string    `json:"identity"`
	Leading  bool      `json:"leading"`
	Term     int64     `json:"term"`
	Since    time.Time `json:"since"`
}

// permitView is a permit the process holds: its semaphore, the semaphore
// key's hash (raw key only with RawKeys), its index and fence, and since
// when it is held.
type permitView struct {
	Semaphore string    `json:"semaphore"`
	KeyHash   string    `json:"key_hash"`
	Key       string    `json:"key,omitempty"`
	Namespace string    `json:"namespace"`
	Index     int       `json:"index"`
	Fence     int64     `json:"fence"`
	Since     time.Time `json:"since"`
}

func newView(s lease.Snapshot, campaigns []obs.Campaign, permits []obs.HeldPermit) *view {
	v := &view{Taken: s.Taken, Leases: make([]leaseView, 0, len(s.Leases)), Losses: make([]lossView, 0, len(s.Losses)),
		Elections: make([]electionView, 0, len(campaigns)), Permits: make([]permitView, 0, len(permits))}
	for _, c := range campaigns {
		v.Elections = append(v.Elections, electionView{Election: c.Election, Identity: c.Identity, Leading: c.Leading, Term: c.Term, Since: c.Since})
	}
	for _, p := range permits {
		v.rawKeys = v.rawKeys || p.Key != ""
		v.Permits = append(v.Permits, permitView{Semaphore: p.Semaphore, KeyHash: p.KeyHash, Key: p.Key, Namespace: p.Namespace, Index: p.Index, Fence: p.Fence, Since: p.Since})
	}
	for _, l := range s.Leases {
		v.rawKeys = v.rawKeys || l.Key != ""
		v.Leases = append(v.Leases, leaseView{Name: l.Name, KeyHash: l.KeyHash, Key: l.Key, Namespace: l.Namespace, Permit: permitOf(l), Fence: l.Fence, Holder: l.Holder, State: l.State,
			TTLMS: millis(l.TTL), AgeMS: millis(l.Age), RemainingMS: millis(l.Remaining), Renewals: l.Renewals, LastRenewalMS: millis(l.LastRenewal)})
	}
	for _, l := range s.Losses {
		v.rawKeys = v.rawKeys || l.Key != ""
		v.Losses = append(v.Losses, lossView{Name: l.Name, KeyHash: l.KeyHash, Key: l.Key, Namespace: l.Namespace, Permit: permitOf(l), Fence: l.Fence, Reason: l.Reason,
			LostAt: l.LostAt, HeldMS: millis(l.Age), Renewals: l.Renewals, LastRenewalMS: millis(l.LastRenewal)})
	}
	return v
}

// permitOf is l's permit index, nil for a key's own lease.
func permitOf(l lease.LeaseInfo) *int {
	if l.Permit < 0 {
		return nil
	}
	return &l.Permit
}

// Inspect is the command that shows what Redis holds for the lease.
func (l leaseView) Inspect() string { return inspectCommand(l.KeyHash, l.Namespace, l.Permit) }

// Inspect is the command that shows what Redis holds for the lost lease's
// key now.
func (l lossView) Inspect() string { return inspectCommand(l.KeyHash, l.Namespace, l.Permit) }

// Inspect is the command that shows what Redis holds for the permit.
func (p permitView) Inspect() string { return inspectCommand(p.KeyHash, p.Namespace, &p.Index) }

// inspectCommand names a lease by its key's hash, which the page shows (and
// not by its key, which it hides by default), by its permit for a permit's
// lease, and by its namespace unless it is the default, which lockwatch
// inspect assumes.
func inspectCommand(hash, namespace string, permit *int) string {
	cmd := "lockwatch inspect --key-hash " + hash
	if permit != nil {
		cmd += " --permit " + strconv.Itoa(*permit)
	}
	if namespace != defaultNamespace {
		cmd += " --namespace " + namespace
	}
	return cmd
}

// defaultNamespace is lease.Config.Namespace's default, and lockwatch
// inspect's.
const defaultNamespace = "lockwatch"

// RawKeys tells the template whether to show the key column.
func (v *view) RawKeys() bool { return v.rawKeys }

// Ago is how long before the snapshot t was, for the losses' table.
func (v *view) Ago(t time.Time) string { return human(v.Taken.Sub(t)) + " ago" }

// millis is a duration in JSON as milliseconds, to the microsecond.
type millis time.Duration

func (m millis) MarshalJSON() ([]byte, error) {
	ms := math.Round(float64(time.Duration(m).Microseconds())) / 1000
	return strconv.AppendFloat(nil, ms, 'f', -1, 64), nil
}

// String is the duration for people: 850µs, 12.3ms, 1.23s, 4m05s, 2h10m.
func (m millis) String() string { return human(time.Duration(m)) }

func human(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d < time.Millisecond:
		return strconv.FormatInt(d.Microseconds(), 10) + "µs"
	case d < time.Second:
		return significant(float64(d)/float64(time.Millisecond)) + "ms"
	case d < time.Minute:
		return significant(d.Seconds()) + "s"
	case d < time.Hour:
		d = d.Round(time.Second)
		return fmt.Sprintf("%dm%02ds", int(d/time.Minute), int(d%time.Minute/time.Second))
	}
	d = d.Round(time.Minute)
	return fmt.Sprintf("%dh%02dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
}

// significant formats x (1 ≤ x < 1000) with three significant digits and
// no trailing zeros: 1.23, 12.3, 850.
func significant(x float64) string {
	decimals := 2
	switch {
	case x >= 100:
		decimals = 0
	case x >= 10:
		decimals = 1
	}
	s := strconv.FormatFloat(x, 'f', decimals, 64)
	if decimals > 0 {
		for s[len(s)-1] == '0' {
			s = s[:len(s)-1]
		}
		if s[len(s)-1] == '.' {
			s = s[:len(s)-1]
		}
	}
	return s
}
