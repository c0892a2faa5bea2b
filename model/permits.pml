/*
 * permits.pml: the permits of issue 30 (package permits), for SPIN.
 *
 * A semaphore of N permits on a key is N leases, the permit slots: slot i
 * is an ordinary lockwatch lease, whose protocol lease.pml checks. This
 * model takes each slot's lease as proven and abstract (an atomic acquire
 * that takes a free slot and mints the slot's fence above its last, an
 * expiry that comes only after the holder's cancel point, or while the
 * holder is paused past it, a release, the slot's FIFO queue and its
 * hand-off) and checks what the permits add: the composition. An Acquire
 * makes the no-wait pass (one look at the slots, which may be stale by
 * the time it tries them, then a no-wait acquire of each slot it saw
 * free, in any order) and, told to wait, the waiting pass (a waiting
 * acquire on every slot of its limit, the first grant taken as the
 * permit, the other waits cancelled, a grant that raced them released at
 * once). A caller's limit is its own: PSHRINK has callers of two limits
 * (a rolling change from N to N - 1). The resource keeps a mark per
 * permit ("K#i"): a write carries (slot, fence).
 *
 * README.md ("The permits") says what is modelled, what is abstracted and
 * why the bounds suffice. Each mutant is a #define that puts back one
 * defect the composition could have; the list at the end of this comment
 * is what check.sh reads. The steps print lines starting with '@', which
 * a counterexample trail shows.
 *
 * Mutants (check.sh mutants reads these lines):
 * mutant SHARED_MARK
 * mutant KEEP_SECOND_GRANT
 * mutant CANCEL_KEEPS_WAIT
 * mutant NO_FREE_CHECK
 * mutant SHRINK_IGNORES_LIMIT
 */

/* ==== Bounds (README.md, "The permits", says why they suffice) ====
 *   PERMITS  2 slots, 3 callers of limit 2, each one Acquire (caller 0:
 *            two), waiting or not; one pause past a cancel point; one
 *            write per holding at the resource
 *   PSHRINK  PERMITS with caller 0 of limit 2 (an old holder, which may
 *            keep slot 1) and callers 1 and 2 of limit 1
 */
#define PERMITS 1
#define PSHRINK 2

#if defined(SHARED_MARK) || defined(KEEP_SECOND_GRANT) || defined(CANCEL_KEEPS_WAIT) || defined(NO_FREE_CHECK)
#ifndef SCENARIO
#define SCENARIO PERMITS
#endif
#endif
#if defined(SHRINK_IGNORES_LIMIT)
#ifndef SCENARIO
#define SCENARIO PSHRINK
#endif
#endif
#ifndef SCENARIO
#define SCENARIO PERMITS
#endif

#define N 2		/* slots: the largest limit of any caller */
#define NC 3		/* callers (clients), each an Acquire at a time */
#ifndef ATT0
#define ATT0 1		/* Acquires of caller 0 over the run */
#endif
#ifndef ATT1
#define ATT1 1		/* of each other caller */
#endif
#ifndef PAUSES
#define PAUSES 1	/* pauses past a cancel point, over the run */
#endif
#define ATTS(c) (c == 0 -> ATT0 : ATT1)
#define BIT(x) (1 << (x))

/* A caller's states: between Acquires, in the no-wait pass, queued on
 * the slots (the waiting pass), leaving the other slots with its permit
 * taken (or with none, having given up), holding (Acquire returned). */
mtype = { IDLE, LOOK, WAIT, LEAVE, HOLD };

/* ==== Redis: each slot's lease, abstract ==== */
byte holder[N];		/* the caller holding the slot's lock, + 1; 0: free */
byte fence[N];		/* the slot's fence record: its last fence */
byte queue[N];		/* the callers queued on the slot (a bit each) */

/* ==== The callers ==== */
mtype st[NC];
byte limit[NC];
byte permit[NC];	/* the slot held (HOLD, LEAVE with one) */
byte pf[NC];		/* its fence */
byte granted[NC];	/* grants (or acquired replies) not yet taken or left */
byte asked[NC];		/* the slots the waiting pass queued on */
bool lost[NC];		/* the lease's context is cancelled (cancel point) */
bool paused[NC];	/* paused past its cancel point: not live, may write */
bool wrote[NC];		/* the holding's write was sent */
byte pauses;

/* ==== The resource: a mark per permit (SHARED_MARK: one) ==== */
byte mark[N];

/* ==== Spec: what the invariants read ==== */
byte minted[N];		/* the last fence minted per slot */
byte accepted[N];	/* the fence of the newest write taken per slot */

#define LIVE(c) ((st[c] == HOLD || (st[c] == LEAVE && permit[c] < N)) && !lost[c] && !paused[c])

/* the invariants' loop counters: not part of the state */
hidden byte l_, k_, n_, c_, j_;

/* the steps' scratch: each step sets it before it reads it */
hidden byte j, mk, ok;

/* ==== Invariants: one inline per guarantee ==== */

/* each slot's fences strictly increase */
inline fence_monotonic(j) {
	assert(fence[j] > minted[j]);
	minted[j] = fence[j]
}

/* live holders (context not cancelled, not paused past the cancel point)
 * number at most L among the callers of limit L or less, for each L: at
 * most max(old, new) while limits disagree, at most N once the holders of
 * a larger limit are gone */
inline within_limit() {
	l_ = 1;
	do
	:: l_ <= N ->
		k_ = 0; n_ = 0;
		do
		:: k_ < NC -> n_ = n_ + (LIVE(k_) && limit[k_] <= l_); k_++
		:: else -> break
		od;
		assert(n_ <= l_);
		l_++
	:: else -> break
	od
}

/* a caller never keeps two permits from one Acquire: once the Acquire
 * returned, the caller holds no slot but its permit; between Acquires,
 * none */
inline one_permit_per_acquire() {
	c_ = 0;
	do
	:: c_ < NC ->
		j_ = 0;
		do
		:: j_ < N ->
			assert(holder[j_] != c_ + 1 || st[c_] == WAIT || st[c_] == LEAVE || st[c_] == HOLD && permit[c_] == j_);
			j_++
		:: else -> break
		od;
		c_++
	:: else -> break
	od
}

/* a write taken for slot j carries the fence of the newest holder of j
 * that wrote: a holder paused past its TTL is refused once the next
 * holder of its slot wrote */
inline no_stale_write(j, f) {
	assert(f >= accepted[j]);
	accepted[j] = f
}

/* the newest holder of a permit, live, is never refused: holders of
 * different permits never compete at the resource */
inline never_refused_live(c) {
	assert(!(LIVE(c) && holder[permit[c]] == c + 1 && pf[c] == minted[permit[c]]))
}

inline invariants() {
	within_limit();
	one_permit_per_acquire()
}

/* ==== The slot's lease: acquire, grant, release (lease.pml's) ==== */

/* grant(j, k): the hand-off gives slot j to caller k, queued on it; the
 * slot's fence minted above its last, a grant message to k */
inline grant(j, k) {
	queue[j] = queue[j] & ~BIT(k);
	holder[j] = k + 1;
	fence[j]++;
	fence_monotonic(j);
	granted[k] = granted[k] | BIT(j);
	printf("@grant slot=%d c=%d f=%d\n", j, k, fence[j])
}

/* handoff(j): a free slot goes to a caller queued on it, if any (FIFO;
 * the model lets it be any queued caller, which FIFO's order is one of) */
inline handoff(j) {
	if
	:: holder[j] == 0 && queue[j] & BIT(0) -> grant(j, 0)
	:: holder[j] == 0 && queue[j] & BIT(1) -> grant(j, 1)
	:: holder[j] == 0 && queue[j] & BIT(2) -> grant(j, 2)
	:: else -> skip
	fi
}

/* release(c, j): release.lua: deletes the lock if it is c's, hands the
 * slot on */
inline release(c, j) {
	if
	:: holder[j] == c + 1 -> holder[j] = 0; printf("@release slot=%d c=%d\n", j, c); handoff(j)
	:: else -> printf("@release slot=%d c=%d not held\n", j, c)
	fi
}

/* take(c, j): a no-wait acquire of slot j: acquire.lua takes a free slot
 * with nobody queued (a queued caller is handed it first) */
inline take(c, j, ok) {
#ifdef NO_FREE_CHECK
	/* the pass takes the slot its look saw free, without an acquire that
	 * checks it still is */
	if
	:: true ->
#else
	if
	:: holder[j] == 0 && queue[j] == 0 ->
#endif
		holder[j] = c + 1;
		fence[j]++;
		fence_monotonic(j);
		permit[c] = j;
		pf[c] = fence[j];
		ok = 1;
		printf("@acquire slot=%d c=%d f=%d\n", j, c, fence[j])
	:: else -> printf("@acquire slot=%d c=%d contended\n", j, c)
	fi
}

/* enqueue(c, j): a waiting acquire of slot j: a free slot with nobody
 * queued is acquired (the reply, like a grant), else c is queued */
inline enqueue(c, j) {
	asked[c] = asked[c] | BIT(j);
	if
	:: holder[j] == 0 && queue[j] == 0 ->
		queue[j] = queue[j] | BIT(c);
		grant(j, c)
	:: else -> queue[j] = queue[j] | BIT(c); printf("@queued slot=%d c=%d\n", j, c)
	fi
}

/* leave(c, j): the wait on slot j cancelled (release.lua's leave): the
 * entry leaves the queue, and a grant that raced is released at once */
inline leave(c, j) {
	asked[c] = asked[c] & ~BIT(j);
#ifndef CANCEL_KEEPS_WAIT
	queue[j] = queue[j] & ~BIT(c);
#else
	/* the cancelled wait keeps its entry, which a later hand-off grants */
	if
	:: holder[j] == c + 1 -> queue[j] = queue[j] & ~BIT(c)
	:: else -> skip
	fi;
#endif
	granted[c] = granted[c] & ~BIT(j);
#ifdef KEEP_SECOND_GRANT
	/* the grant that raced is kept, not released */
	printf("@leave slot=%d c=%d\n", j, c)
#else
	printf("@leave slot=%d c=%d\n", j, c);
	release(c, j)
#endif
}

/* ==== proctype Client: one caller's Acquires (permits.Semaphore.Acquire)
 * and the permits they return ==== */
proctype Client(byte c) {
	byte att = 0, seen;
end:
	do
	/* the no-wait pass: one look (MGET) at the slots of the limit */
	:: atomic { st[c] == IDLE && att < ATTS(c) ->
		att++;
		lost[c] = 0; paused[c] = 0; wrote[c] = 0; permit[c] = N;
		seen = 0; j = 0;
		do
#ifdef SHRINK_IGNORES_LIMIT
		/* the pass looks at every slot, whatever the caller's limit */
		:: j < N ->
#else
		:: j < limit[c] ->
#endif
			if
			:: holder[j] == 0 -> seen = seen | BIT(j)
			:: else -> skip
			fi;
			j++
		:: else -> break
		od;
		printf("@look c=%d free=%d\n", c, seen);
		st[c] = LOOK }
	/* tries a slot seen free (random order): the first acquired is the
	 * permit */
	:: atomic { st[c] == LOOK && seen != 0 ->
		if
		:: seen & BIT(0) -> j = 0
		:: seen & BIT(1) -> j = 1
		fi;
		seen = seen & ~BIT(j);
		ok = 0;
		take(c, j, ok);
		if
		:: ok -> st[c] = HOLD
		:: else -> skip
		fi;
		invariants() }
	/* all contended: fails, or starts the waiting pass */
	:: atomic { st[c] == LOOK && seen == 0 -> printf("@contended c=%d\n", c); st[c] = IDLE }
	:: atomic { st[c] == LOOK && seen == 0 -> asked[c] = 0; st[c] = WAIT }
	/* the waiting pass: a waiting acquire on each slot of the limit, each
	 * its own command */
	:: atomic { st[c] == WAIT && (asked[c] & BIT(0)) == 0 -> enqueue(c, 0); invariants() }
#ifdef SHRINK_IGNORES_LIMIT
	:: atomic { st[c] == WAIT && (asked[c] & BIT(1)) == 0 -> enqueue(c, 1); invariants() }
#else
	:: atomic { st[c] == WAIT && limit[c] > 1 && (asked[c] & BIT(1)) == 0 -> enqueue(c, 1); invariants() }
#endif
	/* the first grant (or acquired reply) is the permit */
	:: atomic { st[c] == WAIT && granted[c] != 0 ->
		if
		:: granted[c] & BIT(0) -> j = 0
		:: granted[c] & BIT(1) -> j = 1
		fi;
		permit[c] = j;
		/* the grant's fence: the slot is c's from its grant on (no
		 * lock expires under a waiter) */
		pf[c] = fence[j];
		granted[c] = granted[c] & ~BIT(j);
		asked[c] = asked[c] & ~BIT(j);
		printf("@take slot=%d c=%d f=%d\n", j, c, pf[c]);
		st[c] = LEAVE }
	/* the wait runs out, or its context is cancelled */
	:: atomic { st[c] == WAIT -> printf("@giveup c=%d\n", c); permit[c] = N; st[c] = LEAVE }
	/* the other waits are cancelled, one command each */
	:: atomic { st[c] == LEAVE && asked[c] & BIT(0) -> leave(c, 0); invariants() }
	:: atomic { st[c] == LEAVE && asked[c] & BIT(1) -> leave(c, 1); invariants() }
	:: atomic { st[c] == LEAVE && asked[c] == 0 ->
		if
		:: permit[c] < N -> st[c] = HOLD
		:: else -> st[c] = IDLE
		fi;
		invariants() }
	/* the holder writes at the resource once; a holder paused past its
	 * cancel point writes late */
	:: atomic { st[c] == HOLD && !lost[c] && !wrote[c] ->
		wrote[c] = 1;
		j = permit[c];
#ifdef SHARED_MARK
		/* the resource keeps one mark for the key, not one per permit */
		mk = 0;
#else
		mk = j;
#endif
		if
		:: pf[c] >= mark[mk] ->
			no_stale_write(j, pf[c]);
			mark[mk] = pf[c];
			printf("@write slot=%d c=%d f=%d taken\n", j, c, pf[c])
		:: else ->
			printf("@write slot=%d c=%d f=%d refused, mark %d\n", j, c, pf[c], mark[mk]);
			never_refused_live(c)
		fi }
	/* the cancel point: the lease is lost before its lock expires */
	:: atomic { st[c] == HOLD && !lost[c] && !paused[c] -> lost[c] = 1; printf("@lost c=%d\n", c) }
	/* a pause past the cancel point: the lock may expire under it */
	:: atomic { st[c] == HOLD && !lost[c] && !paused[c] && pauses < PAUSES ->
		pauses++; paused[c] = 1; printf("@pause c=%d\n", c); invariants() }
	/* resumed, it finds its context cancelled */
	:: atomic { st[c] == HOLD && paused[c] -> paused[c] = 0; lost[c] = 1; printf("@resume c=%d\n", c) }
	/* Release: the permit's lease ends */
	:: atomic { st[c] == HOLD && !paused[c] -> release(c, permit[c]); st[c] = IDLE; invariants() }
	od
}

/* ==== proctype server: what Redis does of itself: a lock expires (after
 * its holder's cancel point, or under a pause), and the next script that
 * touches its queue hands it on ==== */
#define EXPIRES(j) (holder[j] != 0 && st[holder[j] - 1] != WAIT && st[holder[j] - 1] != LEAVE && !(LIVE(holder[j] - 1) && permit[holder[j] - 1] == j))
proctype server() {
end:
	do
	:: atomic { EXPIRES(0) -> holder[0] = 0; printf("@expire slot=0\n"); invariants() }
	:: atomic { EXPIRES(1) -> holder[1] = 0; printf("@expire slot=1\n"); invariants() }
	:: atomic { holder[0] == 0 && queue[0] != 0 -> j = 0; handoff(j); invariants() }
	:: atomic { holder[1] == 0 && queue[1] != 0 -> j = 1; handoff(j); invariants() }
	od
}

init {
	atomic {
		byte c = 0;
		do
		:: c < NC ->
			st[c] = IDLE;
			permit[c] = N;
#if SCENARIO == PSHRINK
			limit[c] = (c == 0 -> N : N - 1);
#else
			limit[c] = N;
#endif
			run Client(c);
			c++
		:: else -> break
		od;
		run server()
	}
}
