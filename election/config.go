package election

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"
)

// Config configures an Election. The zero Config is a valid one: every
// field left zero takes the default its comment gives.
type Config struct {
	// Identity names this candidate in Observe's answer and in every Term it
	// leads: for people, not for deciding who may work (the fence does).
	// Default "<hostname>-<pid>". At most 256 bytes of UTF-8 without control
	// characters.
	Identity string

	// Name is the lock name (lease.Config.Name) of the election's terms'
	// leases, a bounded telemetry label as everywhere in lockwatch, and the
	// election label of its lockwatch_election_* series. Default the key,
	// which is a name the service chooses, not request input. The election
	// records where its Locker does (lease.Config.Telemetry).
	Name string

	// Pause is how long a candidate waits before it campaigns again after a
	// term it lost or a campaign attempt that failed (an error other than
	// contention): a Redis that fails every call is not hammered. Default 1s;
	// negative for none.
	Pause time.Duration

	// OnStartedLeading is called when a term starts, before the leader's
	// function, on Run's goroutine. Default none.
	OnStartedLeading func(Term)

	// OnStoppedLeading is called once for every term that started, after the
	// leader's function returned and the term was resigned, on Run's
	// goroutine. reason says why the term ended: the loss (errors.Is
	// lease.ErrLost), Run's context's cause, or ErrResigned (the function
	// returned while leading); it also wraps ErrLateCompletion when the
	// function returned after its term's key may have passed on. Default none.
	OnStoppedLeading func(t Term, reason error)
}

const (
	defaultPause = time.Second
	maxIdentity  = 256
)

// withDefaults returns c with its zero fields set to their defaults, the
// Name's to key.
func (c Config) withDefaults(key string) Config {
	if c.Name == "" {
		c.Name = key
	}
	if c.Identity == "" {
		host, err := os.Hostname()
		if err != nil || host == "" {
			host = "unknown"
		}
		c.Identity = host + "-" + strconv.Itoa(os.Getpid())
	}
	switch {
	case c.Pause == 0:
		c.Pause = defaultPause
	case c.Pause < 0:
		c.Pause = 0
	}
	return c
}

var errInvalid = errors.New("election: invalid argument")

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errInvalid, fmt.Sprintf(format, args...))
}

// validIdentity refuses an identity a log line or a dashboard could not
// show as it is.
func validIdentity(id string) error {
	if len(id) > maxIdentity {
		return invalidf("identity of %d bytes, at most %d", len(id), maxIdentity)
	}
	if !utf8.ValidString(id) {
		return invalidf("identity %q is not UTF-8", id)
	}
	for _, r := range id {
		if unicode.IsControl(r) {
			return invalidf("identity %q holds a control character", id)
		}
	}
	return nil
}
