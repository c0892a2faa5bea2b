/*
 * shared.pml: the shared/exclusive leases of issue 30 item 5
 * (permits.Shared), for SPIN, modelled before their Go code.
 *
 * Many readers or one writer per key K. A reader holds one permit of K's
 * reader semaphore (R slots: permits.pml's composition, each slot a lease
 * that lease.pml checks). A writer holds the exclusive lease on K itself
 * (the plain lease, its own FIFO queue and fence), then queues on every
 * reader slot at once, works only once it holds K and all R slots, and
 * releases all (slots, then K); a writer whose wait ends releases what it
 * holds. Readers yield: once a writer holds K, a reader holding a slot may
 * stop renewing (the periodic check of K), and is then cancelled at its
 * cancel point; its slot expires, and the next script hands it to the
 * slot's queue head. The resource keeps one mark, under K, which only
 * writers write, with K's fence.
 *
 * Each lease is abstract, as in permits.pml: an acquire takes a free
 * lease with nobody queued and mints its fence above its last; a waiting
 * acquire is queued otherwise; the hand-off (at a release, a leave, or
 * the next script after an expiry) grants the queue's head (FIFO: the
 * queue is an ordered list here, since who is ahead is what the writer's
 * progress rests on); a lock expires only once its holder is past its
 * cancel point or paused past it, never under a waiter.
 *
 * README.md ("Shared and exclusive leases") says what is modelled, what
 * is abstracted and why the bounds suffice. Each mutant is a #define that
 * puts back one defect; check.sh reads the list below. The steps print
 * lines starting with '@', which a counterexample trail shows. A process
 * that has made its attempts ends; any other state with nothing to do is
 * an invalid end state, a deadlock, which pan reports as an error.
 *
 * Mutants (check.sh mutants reads these lines):
 * mutant WRITER_SKIPS_SLOT
 * mutant READER_PASSES_WRITER
 * mutant NO_K_FIRST
 * mutant YIELD_WITHOUT_CANCEL
 * mutant WRITER_FEWER_SLOTS
 */

/* ==== Bounds (README.md, "Shared and exclusive leases", says why) ====
 *   SHARED  R = 2 slots; 1 writer and 2 readers, one Acquire each (a
 *           reader's waiting or not); one wait that ends before its
 *           grants; one fault: a pause past a cancel point, or a
 *           writer's lease lost while it waits; a write per writing
 *   SWRITE  SHARED with 2 writers and 1 reader
 *   SNOEND  SWRITE where no wait ends (Wait without a deadline): a
 *           cycle of waits is then a deadlock, an invalid end state
 */
#define SHARED 1
#define SWRITE 2
#define SNOEND 3

#if defined(WRITER_SKIPS_SLOT) || defined(READER_PASSES_WRITER) || defined(YIELD_WITHOUT_CANCEL) || defined(WRITER_FEWER_SLOTS)
#ifndef SCENARIO
#define SCENARIO SHARED
#endif
#endif
#if defined(NO_K_FIRST)
#ifndef SCENARIO
#define SCENARIO SNOEND
#endif
#endif
#ifndef SCENARIO
#define SCENARIO SHARED
#endif

#define R 2		/* reader slots */
#if SCENARIO == SWRITE || SCENARIO == SNOEND
#define NW 2		/* writers: callers 0 .. NW-1 */
#define NR 1		/* readers: callers NW .. NC-1 */
#else
#define NW 1
#define NR 2
#endif
#define NC (NW + NR)
#if SCENARIO == SNOEND
#define GIVEUPS 0
#endif
#ifndef GIVEUPS
#define GIVEUPS 1	/* waits that end before their grants, over the run */
#endif
#ifndef FAULTS
#define FAULTS 1	/* pauses past a cancel point, writers' leases lost
			 * while waiting, over the run */
#endif
#define BIT(x) (1 << (x))
#define WRITER(c) ((c) < NW)

/* A caller's states. A reader: between Acquires, in the no-wait pass,
 * queued on the slots, leaving the other slots, holding. A writer: queued
 * on K, holding K and queued on the slots, working (holds all), leaving
 * (its slots, then K). */
mtype = { IDLE, LOOK, WAIT, LEAVE, HOLD, KWAIT, SWAIT, WORK };

/* ==== Redis: the reader slots' leases, abstract ==== */
byte holder[R];		/* the caller holding the slot's lock, + 1; 0: free */
byte fence[R];		/* the slot's fence record */
byte q[R * NC];		/* slot j's queue: q[j * NC + i], callers + 1, head first */
byte qn[R];		/* its length */

/* ==== Redis: K's exclusive lease, abstract ==== */
byte kholder;		/* the writer holding K, + 1 */
byte kfence;		/* K's fence record */
byte kq[NW];		/* K's queue, head first */
byte kqn;

/* ==== The callers ==== */
mtype st[NC];
byte permit[NC];	/* a reader's slot (HOLD, LEAVE with one); R: none */
byte granted[NC];	/* a reader's grants not yet taken or left */
byte asked[NC];		/* the slots the waiting pass queued on */
byte wf[NC];		/* a writer's token: K's fence */
bool lost[NC];		/* context cancelled (cancel point; yielded) */
bool paused[NC];	/* paused past its cancel point: not live */
bool wrote[NC];		/* a writer's write was sent */
byte giveups, faults;

/* ==== The resource: one mark, under K, for the writers ==== */
byte mark;

/* ==== Spec: what the invariants read ==== */
byte minted[R];		/* the last fence minted per slot */
byte kminted;		/* the last K fence minted */
byte accepted;		/* the fence of the newest write taken */

#define RLIVE(c) ((st[c] == HOLD || (st[c] == LEAVE && permit[c] < R)) && !lost[c] && !paused[c])
#define WLIVE(c) (st[c] == WORK && !lost[c] && !paused[c])

/* the invariants' loop counters and the queues' scratch: not state */
hidden byte k_, n_, m_, i_, h_;

/* the steps' scratch: each step sets it before it reads it */
hidden byte j, ok;

/* ==== Invariants: one inline per guarantee ==== */

/* each slot's fences strictly increase */
inline fence_monotonic(j) {
	assert(fence[j] > minted[j]);
	minted[j] = fence[j]
}

/* K's fences, the writers' tokens, strictly increase */
inline k_fence_monotonic() {
	assert(kfence > kminted);
	kminted = kfence
}

/* never a live writer together with a live reader; never two live
 * writers; at most R live readers */
inline exclusion() {
	k_ = 0; n_ = 0; m_ = 0;
	do
	:: k_ < NW -> n_ = n_ + WLIVE(k_); k_++
	:: k_ >= NW && k_ < NC -> m_ = m_ + RLIVE(k_); k_++
	:: else -> break
	od;
	assert(n_ <= 1);
	assert(n_ == 0 || m_ == 0);
	assert(m_ <= R)
}

/* a write taken at the resource carries a fence at or above every
 * fence taken before: a deposed writer paused past its cancel point is
 * refused once the next writer wrote */
inline no_stale_write(f) {
	assert(f >= accepted);
	accepted = f
}

/* a live writer, K's newest, is never refused */
inline never_refused_live(c) {
	assert(!(WLIVE(c) && kholder == c + 1 && wf[c] == kminted))
}

/* the writer's progress, as safety: a reader takes slot j (acquire or
 * grant) only when no writer is queued on j ahead of it */
inline no_pass_writer(j, c) {
	i_ = 0;
	do
	:: i_ < qn[j] && q[j * NC + i_] != c + 1 ->
		assert(!WRITER(q[j * NC + i_] - 1));
		i_++
	:: else -> break
	od
}

inline invariants() {
	exclusion()
}

/* ==== The queues: FIFO lists ==== */

/* qdel(j, c): c's entry leaves slot j's queue, if there */
inline qdel(j, c) {
	i_ = 0;
	do
	:: i_ < qn[j] && q[j * NC + i_] != c + 1 -> i_++
	:: i_ < qn[j] && q[j * NC + i_] == c + 1 ->
		do
		:: i_ + 1 < qn[j] -> q[j * NC + i_] = q[j * NC + i_ + 1]; i_++
		:: else -> break
		od;
		qn[j]--;
		q[j * NC + qn[j]] = 0;
		break
	:: else -> break
	od
}

/* kqdel(c): c's entry leaves K's queue, if there (NW <= 2) */
inline kqdel(c) {
	if
	:: kqn > 0 && kq[0] == c + 1 -> kq[0] = kq[1]; kq[1] = 0; kqn--
	:: kqn > 1 && kq[1] == c + 1 -> kq[1] = 0; kqn--
	:: else -> skip
	fi
}

/* ==== The slots' leases: grant, release, acquire ==== */

/* handoff(j): a free slot goes to the head of its queue, minted above
 * the slot's last fence, a grant message to it */
inline handoff(j) {
	if
	:: holder[j] == 0 && qn[j] > 0 ->
		h_ = q[j * NC] - 1;
		qdel(j, h_);
		holder[j] = h_ + 1;
		fence[j]++;
		fence_monotonic(j);
		granted[h_] = granted[h_] | BIT(j);
		printf("@grant slot=%d c=%d f=%d\n", j, h_, fence[j])
	:: else -> skip
	fi
}

/* release(c, j): release.lua: deletes the lock if it is c's, hands on */
inline release(c, j) {
	if
	:: holder[j] == c + 1 -> holder[j] = 0; printf("@release slot=%d c=%d\n", j, c); handoff(j)
	:: else -> skip
	fi
}

/* FREE(j, c): acquire.lua takes slot j for c: free, nobody queued */
#ifdef READER_PASSES_WRITER
/* a reader takes a free slot whoever is queued on it */
#define FREE(j, c) (holder[j] == 0 && (qn[j] == 0 || !WRITER(c)))
#else
#define FREE(j, c) (holder[j] == 0 && qn[j] == 0)
#endif

/* take(c, j, ok): a reader's no-wait acquire of slot j */
inline take(c, j, ok) {
	if
	:: FREE(j, c) ->
		no_pass_writer(j, c);
		holder[j] = c + 1;
		fence[j]++;
		fence_monotonic(j);
		permit[c] = j;
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
	:: FREE(j, c) ->
		no_pass_writer(j, c);
		holder[j] = c + 1;
		fence[j]++;
		fence_monotonic(j);
		granted[c] = granted[c] | BIT(j);
		printf("@acquire slot=%d c=%d f=%d\n", j, c, fence[j])
	:: else ->
		q[j * NC + qn[j]] = c + 1;
		qn[j]++;
		printf("@queued slot=%d c=%d\n", j, c)
	fi
}

/* leave(c, j): the wait on slot j cancelled: the entry leaves the queue,
 * a grant that raced is released at once */
inline leave(c, j) {
	asked[c] = asked[c] & ~BIT(j);
	granted[c] = granted[c] & ~BIT(j);
	qdel(j, c);
	printf("@leave slot=%d c=%d\n", j, c);
	release(c, j)
}

/* ==== K's lease ==== */

inline kgrant(k) {
	kholder = k + 1;
	kfence++;
	k_fence_monotonic();
	printf("@grant K c=%d f=%d\n", k, kfence)
}

inline khandoff() {
	if
	:: kholder == 0 && kqn > 0 -> h_ = kq[0] - 1; kqdel(h_); kgrant(h_)
	:: else -> skip
	fi
}

/* kenqueue(c): a waiting acquire of K */
inline kenqueue(c) {
	if
	:: kholder == 0 && kqn == 0 -> kgrant(c)
	:: else -> kq[kqn] = c + 1; kqn++; printf("@queued K c=%d\n", c)
	fi
}

/* krelease(c): the writer's wait on K left, K released if c's */
inline krelease(c) {
	kqdel(c);
	if
	:: kholder == c + 1 -> kholder = 0; printf("@release K c=%d\n", c); khandoff()
	:: else -> skip
	fi
}

/* ==== proctype Reader: a reader's Acquire (a permit of K's reader
 * semaphore, permits.pml's passes) and the permit it returns ==== */
proctype Reader(byte c) {
	byte att = 0;
	do
	:: atomic { st[c] == IDLE && att == 1 -> break }
	/* the no-wait pass, in one step: a slot free with nobody queued is
	 * taken, any of them (permits.pml checks the pass's own steps) */
	:: atomic { st[c] == IDLE && att < 1 ->
		att++;
		permit[c] = R;
		if
		:: FREE(0, c) -> j = 0
		:: FREE(1, c) -> j = 1
		:: else -> j = R
		fi;
		ok = 0;
		if
		:: j < R -> take(c, j, ok); st[c] = HOLD
		:: else -> printf("@acquire c=%d contended\n", c); st[c] = LOOK
		fi;
		invariants() }
	/* all contended: fails, or starts the waiting pass */
	:: atomic { st[c] == LOOK -> st[c] = IDLE }
	:: atomic { st[c] == LOOK -> asked[c] = 0; st[c] = WAIT }
	/* the waiting pass: a waiting acquire on each slot */
	:: atomic { st[c] == WAIT && (asked[c] & BIT(0)) == 0 -> enqueue(c, 0); invariants() }
	:: atomic { st[c] == WAIT && (asked[c] & BIT(1)) == 0 -> enqueue(c, 1); invariants() }
	:: atomic { st[c] == WAIT && granted[c] != 0 ->
		if
		:: granted[c] & BIT(0) -> j = 0
		:: granted[c] & BIT(1) -> j = 1
		fi;
		permit[c] = j;
		granted[c] = granted[c] & ~BIT(j);
		asked[c] = asked[c] & ~BIT(j);
		printf("@take slot=%d c=%d f=%d\n", j, c, fence[j]);
		st[c] = LEAVE }
	:: atomic { st[c] == WAIT && giveups < GIVEUPS ->
		giveups++; printf("@giveup c=%d\n", c); permit[c] = R; st[c] = LEAVE }
	:: atomic { st[c] == LEAVE && asked[c] & BIT(0) -> leave(c, 0); invariants() }
	:: atomic { st[c] == LEAVE && asked[c] & BIT(1) -> leave(c, 1); invariants() }
	:: atomic { st[c] == LEAVE && asked[c] == 0 ->
		if
		:: permit[c] < R -> st[c] = HOLD
		:: else -> st[c] = IDLE
		fi;
		invariants() }
	/* the yield: the periodic check finds a writer holding K; the permit
	 * stops renewing, and its context is cancelled at its cancel point,
	 * before its lock can expire */
	:: atomic { st[c] == HOLD && kholder != 0 && !lost[c] && !paused[c] && holder[permit[c]] == c + 1 ->
		printf("@yield c=%d slot=%d\n", c, permit[c]);
#ifdef YIELD_WITHOUT_CANCEL
		/* the slot is freed (deleted, or its expiry set short) before
		 * the reader's cancel point */
		j = permit[c];
		holder[j] = 0;
		handoff(j);
#else
		lost[c] = 1;
#endif
		invariants() }
	/* a pause past the cancel point: the lock may expire under it */
	:: atomic { st[c] == HOLD && !lost[c] && !paused[c] && faults < FAULTS ->
		faults++; paused[c] = 1; printf("@pause c=%d\n", c); invariants() }
	:: atomic { st[c] == HOLD && paused[c] -> paused[c] = 0; lost[c] = 1; printf("@resume c=%d\n", c) }
	:: atomic { st[c] == HOLD && !paused[c] ->
		release(c, permit[c]); st[c] = IDLE; invariants() }
	od
}

/* HOLDS_ALL(c): the writer holds every slot it covers */
#if defined(WRITER_SKIPS_SLOT)
/* it works holding all slots but one */
#define HOLDS_ALL(c) ((holder[0] == c + 1) + (holder[1] == c + 1) >= R - 1)
#else
#define HOLDS_ALL(c) (holder[0] == c + 1 && (holder[1] == c + 1 || WSLOTS == 1))
#endif
#ifdef WRITER_FEWER_SLOTS
/* the writer's limit is 1, the readers' 2: callers of one key with
 * different limits, which the key's record in Redis refuses
 * (permits.Shared's agree) */
#define WSLOTS 1
#else
#define WSLOTS R
#endif

/* ==== proctype Writer: a writer's Acquire (K, then every slot), its
 * write under K, and its release ==== */
proctype Writer(byte c) {
	byte att = 0;
	do
	:: atomic { st[c] == IDLE && att == 1 -> break }
#ifndef NO_K_FIRST
	/* a waiting acquire of K */
	:: atomic { st[c] == IDLE && att < 1 ->
		att++; lost[c] = 0; paused[c] = 0; wrote[c] = 0; asked[c] = 0;
		kenqueue(c); st[c] = KWAIT }
	/* K held: its fence is the writer's token; a waiting acquire on
	 * each slot, each its own command */
	:: atomic { st[c] == KWAIT && kholder == c + 1 ->
		wf[c] = kfence; printf("@take K c=%d f=%d\n", c, wf[c]); st[c] = SWAIT }
	:: atomic { st[c] == SWAIT && (asked[c] & BIT(0)) == 0 -> enqueue(c, 0); invariants() }
	:: atomic { st[c] == SWAIT && WSLOTS > 1 && (asked[c] & BIT(1)) == 0 -> enqueue(c, 1); invariants() }
	/* holding K and every slot, it works */
	:: atomic { st[c] == SWAIT && !lost[c] && HOLDS_ALL(c) ->
		granted[c] = 0; printf("@work c=%d f=%d\n", c, wf[c]); st[c] = WORK; invariants() }
#else
	/* the writer queues on the slots first, and takes K once it holds
	 * them all */
	:: atomic { st[c] == IDLE && att < 1 ->
		att++; lost[c] = 0; paused[c] = 0; wrote[c] = 0; asked[c] = 0; st[c] = SWAIT }
	:: atomic { st[c] == SWAIT && (asked[c] & BIT(0)) == 0 -> enqueue(c, 0); invariants() }
	:: atomic { st[c] == SWAIT && (asked[c] & BIT(1)) == 0 -> enqueue(c, 1); invariants() }
	:: atomic { st[c] == SWAIT && !lost[c] && HOLDS_ALL(c) -> kenqueue(c); st[c] = KWAIT }
	:: atomic { st[c] == KWAIT && kholder == c + 1 ->
		wf[c] = kfence; printf("@work c=%d f=%d\n", c, wf[c]); st[c] = WORK; invariants() }
#endif
	/* the wait ends (its time, or its context), or a lease it holds is
	 * lost while it waits: it releases what it holds */
	:: atomic { (st[c] == KWAIT || st[c] == SWAIT) && giveups < GIVEUPS ->
		giveups++; printf("@giveup c=%d\n", c); st[c] = LEAVE }
	:: atomic { st[c] == SWAIT && !lost[c] && faults < FAULTS ->
		faults++; lost[c] = 1; printf("@lost c=%d waiting\n", c) }
	:: atomic { st[c] == SWAIT && lost[c] -> st[c] = LEAVE }
	/* the write, under K's mark with K's fence; a writer paused past its
	 * cancel point writes late */
	:: atomic { st[c] == WORK && !lost[c] && !wrote[c] ->
		wrote[c] = 1;
		if
		:: wf[c] >= mark ->
			no_stale_write(wf[c]);
			mark = wf[c];
			printf("@write c=%d f=%d taken\n", c, wf[c])
		:: else ->
			printf("@write c=%d f=%d refused, mark %d\n", c, wf[c], mark);
			never_refused_live(c)
		fi }
	:: atomic { st[c] == WORK && !lost[c] && !paused[c] && faults < FAULTS ->
		faults++; paused[c] = 1; printf("@pause c=%d\n", c); invariants() }
	:: atomic { st[c] == WORK && paused[c] -> paused[c] = 0; lost[c] = 1; printf("@resume c=%d\n", c) }
	:: atomic { st[c] == WORK && !paused[c] -> printf("@done c=%d\n", c); st[c] = LEAVE; invariants() }
	/* Release: every slot (its wait left, the slot released), then K */
	:: atomic { st[c] == LEAVE && asked[c] & BIT(0) ->
		asked[c] = asked[c] & ~BIT(0); qdel(0, c); release(c, 0); invariants() }
	:: atomic { st[c] == LEAVE && asked[c] & BIT(1) ->
		asked[c] = asked[c] & ~BIT(1); qdel(1, c); release(c, 1); invariants() }
	:: atomic { st[c] == LEAVE && asked[c] == 0 -> krelease(c); granted[c] = 0; st[c] = IDLE; invariants() }
	od
}

/* ==== proctype server: what Redis does of itself: a lock expires once
 * its holder is past its cancel point (or paused past it), never under a
 * waiter, and the next script that touches its queue hands it on ==== */
#define WGONE(w) (lost[w] || paused[w])
#define SEXPIRES(j) (holder[j] != 0 && (WRITER(holder[j] - 1) -> WGONE(holder[j] - 1) : \
	(st[holder[j] - 1] != WAIT && st[holder[j] - 1] != LEAVE && !(RLIVE(holder[j] - 1) && permit[holder[j] - 1] == j))))
proctype server() {
end:
	do
	:: atomic { SEXPIRES(0) -> holder[0] = 0; printf("@expire slot=0\n"); invariants() }
	:: atomic { SEXPIRES(1) -> holder[1] = 0; printf("@expire slot=1\n"); invariants() }
	:: atomic { kholder != 0 && WGONE(kholder - 1) -> kholder = 0; printf("@expire K\n") }
	:: atomic { holder[0] == 0 && qn[0] != 0 -> j = 0; handoff(j); invariants() }
	:: atomic { holder[1] == 0 && qn[1] != 0 -> j = 1; handoff(j); invariants() }
	:: atomic { kholder == 0 && kqn != 0 -> khandoff() }
	od
}

init {
	atomic {
		byte c = 0;
		do
		:: c < NC ->
			st[c] = IDLE;
			permit[c] = R;
			if
			:: WRITER(c) -> run Writer(c)
			:: else -> run Reader(c)
			fi;
			c++
		:: else -> break
		od;
		run server()
	}
}
