package main

import (
	"fmt"
	"strings"
	"time"
)

// failoverFigure is what one failover cost the holders of the keys the
// failed primary served: how long until a replica was promoted, until the
// first acquire of such a key that succeeded after the break (on the new
// primary: the old one was dead, stopped, cut off or handing over),
// and which of the leases live at the break were lost, and why (the
// others were released before their cancel point came).
type failoverFigure struct {
	Fault        string        // the fault that broke the primary, "#N kind"
	Promoted     time.Duration // from the break to the promotion
	FirstAcquire time.Duration // from the break to the first successful acquire; -1 if none
	Held, Lost   int           // leases live at the break, and those of them lost
	Reasons      map[string]int
}

func failoverFigures(fos []failover, ops []op, leases []leaseRec) []failoverFigure {
	var out []failoverFigure
	for _, fo := range fos {
		fig := failoverFigure{Fault: fmt.Sprintf("#%d %s", fo.Fault, fo.Kind), Promoted: time.Duration(fo.Promoted - fo.Broken),
			FirstAcquire: -1, Reasons: map[string]int{}}
		for _, o := range ops {
			// Sent after the break: a reply in flight from the old
			// primary does not count.
			if o.Kind == kindAcquire && o.Outcome == outAcquired && o.Invoke >= fo.Broken && fo.serves(o.Key) {
				if d := time.Duration(o.Return - fo.Broken); fig.FirstAcquire < 0 || d < fig.FirstAcquire {
					fig.FirstAcquire = d
				}
			}
		}
		for _, r := range leases {
			// An election's term starts when its waiting acquire is
			// granted: a term that began after the break is the key's
			// first acquire there.
			if r.Term && r.Acquired >= fo.Broken && fo.serves(r.Key) {
				if d := time.Duration(r.Acquired - fo.Broken); fig.FirstAcquire < 0 || d < fig.FirstAcquire {
					fig.FirstAcquire = d
				}
			}
			if r.Acquired <= fo.Broken && fo.Broken < r.liveUntil() && fo.serves(r.Key) {
				fig.Held++
				if r.Lost {
					fig.Lost++
					fig.Reasons[r.Reason]++
				}
			}
		}
		out = append(out, fig)
	}
	return out
}

func (f failoverFigure) String() string {
	first := "no acquire succeeded after it"
	if f.FirstAcquire >= 0 {
		first = fmt.Sprintf("first acquire %v after it", f.FirstAcquire.Round(time.Millisecond))
	}
	var why []string
	for _, k := range sortedKeys(f.Reasons) {
		why = append(why, fmt.Sprintf("%s %d", k, f.Reasons[k]))
	}
	s := fmt.Sprintf("failover (%s): replica promoted %v after the break, %s; %d of the %d leases live at the break lost",
		f.Fault, f.Promoted.Round(time.Millisecond), first, f.Lost, f.Held)
	if len(why) > 0 {
		s += " (" + strings.Join(why, ", ") + ")"
	}
	return s
}
