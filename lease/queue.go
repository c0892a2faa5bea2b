package lease

import (
	"container/heap"
	"time"
)

// queue is a min-heap of leases ordered by one instant (next renewal or
// cancel point). Each lease records its own position so it can be removed or
// re-ordered in O(log n) when it is released or renewed.
type queue struct {
	items []*Lease
	at    func(*Lease) time.Duration
	pos   func(*Lease) *int
}

func (q *queue) Len() int           { return len(q.items) }
func (q *queue) Less(i, j int) bool { return q.at(q.items[i]) < q.at(q.items[j]) }
func (q *queue) Swap(i, j int) {
	q.items[i], q.items[j] = q.items[j], q.items[i]
	*q.pos(q.items[i]) = i
	*q.pos(q.items[j]) = j
}

func (q *queue) Push(x any) {
	l := x.(*Lease)
	*q.pos(l) = len(q.items)
	q.items = append(q.items, l)
}

func (q *queue) Pop() any {
	n := len(q.items) - 1
	l := q.items[n]
	q.items[n] = nil
	q.items = q.items[:n]
	*q.pos(l) = -1
	return l
}

func (q *queue) push(l *Lease) { heap.Push(q, l) }

func (q *queue) remove(l *Lease) {
	if i := *q.pos(l); i >= 0 {
		heap.Remove(q, i)
	}
}

func (q *queue) fix(l *Lease) {
	if i := *q.pos(l); i >= 0 {
		heap.Fix(q, i)
	}
}

// next returns the earliest lease, or nil.
func (q *queue) next() *Lease {
	if len(q.items) == 0 {
		return nil
	}
	return q.items[0]
}

func newRenewQueue() queue {
	return queue{
		at:  func(l *Lease) time.Duration { return l.renewAt },
		pos: func(l *Lease) *int { return &l.renewIdx },
	}
}

func newDeadlineQueue() queue {
	return queue{
		at:  func(l *Lease) time.Duration { return time.Duration(l.cancelAt.Load()) },
		pos: func(l *Lease) *int { return &l.deadlineIdx },
	}
}
