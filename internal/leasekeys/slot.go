package leasekeys

import (
	"strconv"
	"strings"
)

// OfSlot returns the names of permit slot of key's semaphore (package
// permits) in namespace: key's names (Of) with "#<slot>" after each, so
// that every permit of a key shares the key's hash tag (one Redis Cluster
// slot, where one MGET reads them all), and none is the name of the
// exclusive lease on key, nor of another key's permit.
func OfSlot(namespace, key string, slot int) Keys { return Of(namespace, key).Slot(slot) }

// Slot returns the names of permit slot of the key whose names k are
// (OfSlot): for a key known only by its hash (OfHash).
func (k Keys) Slot(slot int) Keys {
	suffix := "#" + strconv.Itoa(slot)
	return Keys{
		Lock: k.Lock + suffix, Fence: k.Fence + suffix,
		Queue: k.Queue + suffix, Entries: k.Entries + suffix,
	}
}

// SlotOf returns the slot whose lock a permit's lock name is (Slot's
// Lock), and false for the lock of a key's own lease.
func SlotOf(lock string) (int, bool) {
	i := strings.LastIndexByte(lock, '#')
	if i < 0 {
		return 0, false
	}
	slot, err := strconv.Atoi(lock[i+1:])
	return slot, err == nil
}

// SlotKey is the key of permit slot of key's semaphore, as callers see it:
// the lease's Key, its token's Scope, and the name under which a resource
// keeps the permit's mark.
func SlotKey(key string, slot int) string { return key + "#" + strconv.Itoa(slot) }

// Readers returns the name of the record of key's shared lease (package
// permits, Shared) that holds its number of readers' permits, in key's
// hash slot: every caller must cover the same permits, or a writer could
// miss a reader.
func Readers(namespace, key string) string {
	lock := Of(namespace, key).Lock
	return lock[:len(lock)-1] + "r"
}
