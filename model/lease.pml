/*
 * lease.pml: lockwatch's lease protocol, for SPIN.
 *
 * Redis is modelled script by script, as lease/scripts/*.lua run: the fence
 * record's two bar lists with their marks and their bound, the TIME floor,
 * the ghosts, the wait queue and its grants. The client is modelled as
 * lease/*.go decides: an owner token per attempt, validity counted from
 * the send, the cancel point, the clean-up of an unknown acquire, the
 * ghosts a Locker remembers, the renewal rule. Around them are the faults
 * the library claims to survive: a network that delays, reorders, copies
 * and loses; a clock with TTL expiry; a paused client; a restart without
 * persistence; a failover to a replica that missed the last write (with and
 * without the replication ack); and a force release. The resource is
 * fence/scripts/write.lua's mark, behind the checks a store makes of a
 * token first (its scope, its signature, the clock bound: fence.policy),
 * against a stranger that writes with tokens it made up; and an operator
 * who sets a mark that is ahead back (lockwatch fence, RedisStore.Repair).
 *
 * README.md beside this file says how to check the model (make model), why
 * the bounds below are enough, and what the model leaves out. Each
 * invariant is an inline named after the guarantee of RELIABILITY.md it
 * states (RELIABILITY.md, "The model"). Each mutant is a #define that puts
 * back one defect a review found; MUTANTS lists them.
 *
 * The server prints every step it takes (lines starting with '@'). A random
 * simulation (spin -DSCENARIO=SIM -n<seed>) is thus a run of the protocol,
 * and conformance_test.go replays it against the real scripts.
 */

/* ==== Bounds: the one place (README.md, "Bounds", says why they suffice) ====
 *
 * Each scenario is checked exhaustively (make model). A scenario enables
 * the actors and faults whose interleavings one group of guarantees
 * depends on, so that each stays small enough to check in seconds:
 *   ENDS   bars, marks, ghosts, clean-ups and results: two Lockers, one
 *          with two attempts, late copies, the bar lists at 2
 *   FORCE  a force release with renewals, late copies, the lists at 1
 *   TIME   validity, cancel points and renewals on a discrete clock, with
 *          late copies and a pause
 *   LOSS   Redis losing data: a restart without persistence, a failover
 *          that loses the last script (one Locker with the replication
 *          ack), the fence record evicted; the writes at the resource
 *   TOKENS what a resource checks of a token before its mark (scope,
 *          signature, the clock bound), with and without a secret: a
 *          stranger writes with another key's tokens, forged ones and
 *          replays, beside the Lockers' writes
 *   REPAIR an operator sets a mark that is ahead back (lockwatch fence):
 *          TOKENS's resource without the secret and its stranger, one
 *          write, the resource's clock up to LAG behind the servers', a
 *          re-sent copy of the repair script
 *   RLOSS  the operator's repair where the fence record is lost (an
 *          eviction; a record behind lies between it and REPAIR's kept
 *          one), the writes at the resource, no renewals; the
 *          resource's clock as in REPAIR
 *   FIFO   the wait queue and the hand-off: three Lockers that wait,
 *          entries that expire, refreshes, grants, leaves, on TIME's
 *          clock (no copies, no losses, no renewals)
 *   QGHOST FIFO with two Lockers of two attempts: a leave without a
 *          reply leaves a ghost whose entry may still be queued
 *   QDUP   FIFO with a late copy: a holder, and a waiter of two attempts
 *          whose acquire the network may send twice
 *   SIM    everything at once and larger, for random simulations only
 *          (the conformance test): never checked exhaustively; without
 *          the stranger, whose checks run in Go (fence.policy)
 * Untimed scenarios keep of time only what the cancel point guarantees:
 * a lock expires at any moment no live lease and no awaited acquire
 * depends on it (proctype clock).
 */
#define ENDS 1
#define FORCE 2
#define TIME 3
#define LOSS 4
#define SIM 5
#define TOKENS 6
#define REPAIR 7
#define RLOSS 8
#define FIFO 9
#define QGHOST 10
#define QDUP 11

/* A mutant is checked in the scenario that can show it. */
#if defined(REUSE_OWNER_TOKEN) || defined(NO_CONTENDED_BAR) || defined(RELEASE_WITHOUT_BAR) || defined(BARS_SHARED_LIST) || defined(RESENT_RESULT_LIES) || defined(OWN_GHOST_CONTENDS) || defined(ACQUIRE_BEFORE_CLEANUP)
#ifndef SCENARIO
#define SCENARIO ENDS
#endif
#endif
#if defined(FORCE_UNDONE_BY_LATE_COPY) || defined(FORCE_NAMES_NO_HOLDER)
#ifndef SCENARIO
#define SCENARIO FORCE
#endif
#endif
#if defined(LATE_RENEWAL_REPLY_APPLIED) || defined(LATE_ACQUIRE_REPLY_USED)
#ifndef SCENARIO
#define SCENARIO TIME
#endif
#endif
#if defined(INCR_WITHOUT_TIME_FLOOR)
#ifndef SCENARIO
#define SCENARIO LOSS
#endif
#endif
#if defined(NO_SCOPE_CHECK) || defined(NO_ORIGIN_CHECK) || defined(NO_AHEAD_CHECK)
#ifndef SCENARIO
#define SCENARIO TOKENS
#endif
#endif
#if defined(REPAIR_TO_RECORD) || defined(REPAIR_WITHOUT_SKEW)
#ifndef SCENARIO
#define SCENARIO RLOSS
#endif
#endif
#if defined(GHOST_ENTRY_KEPT)
#ifndef SCENARIO
#define SCENARIO QGHOST
#endif
#endif
#if defined(QUEUED_COPY_BARRED) || defined(OWN_GRANT_BARRED)
#ifndef SCENARIO
#define SCENARIO QDUP
#endif
#endif
#if defined(GRANT_PASSES_HEAD) || defined(VALIDITY_FROM_RECEIPT) || defined(EXPIRED_NOT_SKIPPED) || defined(LIVE_SKIPPED) || defined(LEAVE_KEEPS_GRANT) || defined(GRANT_REUSES_FENCE) || defined(ENQUEUE_APART)
#ifndef SCENARIO
#define SCENARIO FIFO
#endif
#endif

/* The bounds, by scenario (README.md, "Bounds"):
 *             ENDS FORCE TIME LOSS TOKENS REPAIR RLOSS FIFO QGHOST QDUP SIM
 * NC         2       2     2    2    2      2      2     3    2      2    3    Lockers (clients), each with its scheduler
 * ATT0       2       1     1    1    1      1      1     1    2      1    80   acquire attempts of Locker 0 over the run
 * ATT1       1       1     1    1    1      1      1     1    2      2    80   of each other Locker
 * BARS       2       1     2    2    1      1      1     1    1      1    16   tokens per bar list (record.lua: 16)
 * NCOPY      1       1     1    1    1      1      1     1    1      1    2    copies in flight at once
 * DUPS       1       1     1    0    0      0      0     0    0      1    200  copies the network makes over the run
 * FORCES     0       1     0    0    0      0      0     0    0      0    20   force releases
 * RENEWALS   0       1     1    1    0      0      0     0    0      0    3    renewals per lease
 * PAUSES     0       0     1    0    0      0      0     0    0      0    20   client pauses
 * RFAULTS    0       0     0    1    0      0      1     0    0      0    40   losses of data by Redis
 * LOSSES     0       0     0    7    0      0      4     0    0      0    7    which: 1 restart, 2 failover, 4 eviction of the fence record
 * WRITES     0       0     0    1    1      1      1     0    0      0    1    leases write at the resource
 * TIMED      0       0     1    0    0      0      0     1    1      1    1    a discrete clock (else: expiry of unused locks)
 * TTL        2       2     3    2    2      2      2     2    2      2    3    the lock's TTL, in ticks of the servers' clock
 * CA         1       1     2    1    1      1      1     1    1      1    2    cancelAfter (TTL - drift - safety), in ticks
 * ACKC       NC      NC    NC   0    NC     NC     NC    NC   NC     NC   0    the Locker with WithReplicationAck (NC: none)
 * STRANGER   0       0     0    0    2      1      0     0    0      0    0    writes of the stranger (tokens it made up)
 * SECRET     -       -     -    -    2      0      -     -    -      -    -    the resource has the secret: 0 no, 1 yes, 2 either
 * SKEW       -       -     -    -    1      2      2     -    -      -    -    MaxSkew, in fence units (TIME's): the clock bound; the repair adds it to TIME
 * LAG        0       0     0    0    0      2      2     0    0      0    0    how far behind TIME the resource's clock may read (at most SKEW)
 * REPAIRS    0       0     0    0    0      1      1     0    0      0    0    an operator's repairs of the mark (lockwatch fence)
 * RCOPIES    0       0     0    0    0      1      0     0    0      0    0    copies of the repair script the network makes (a re-send)
 * QN         0       0     0    0    0      0      0     3    3      3    0    the wait queue's entries (FIFO; 0: acquire.lua as it is)
 * QTTL       -       -     -    -    -      -      -     2    2      2    -    an entry's TTL (the waiter's), in ticks
 */
#ifndef SCENARIO
#define SCENARIO ENDS
#endif

#if SCENARIO == ENDS
#ifndef LOSSES
#define LOSSES 0
#endif
#ifndef CA
#define CA 1
#endif
#ifndef TTL
#define TTL 2
#endif
#ifndef NC
#define NC 2
#endif
#ifndef ATT0
#define ATT0 2
#endif
#ifndef ATT1
#define ATT1 1
#endif
#ifndef BARS
#define BARS 2
#endif
#ifndef NCOPY
#define NCOPY 1
#endif
#ifndef DUPS
#define DUPS 1
#endif
#ifndef FORCES
#define FORCES 0
#endif
#ifndef RENEWALS
#define RENEWALS 0
#endif
#ifndef PAUSES
#define PAUSES 0
#endif
#ifndef RFAULTS
#define RFAULTS 0
#endif
#ifndef WRITES
#define WRITES 0
#endif
#ifndef TIMED
#define TIMED 0
#endif
#ifndef ACKC
#define ACKC NC
#endif
#endif
#if SCENARIO == FORCE
#ifndef LOSSES
#define LOSSES 0
#endif
#ifndef CA
#define CA 1
#endif
#ifndef TTL
#define TTL 2
#endif
#ifndef NC
#define NC 2
#endif
#ifndef ATT0
#define ATT0 1
#endif
#ifndef ATT1
#define ATT1 1
#endif
#ifndef BARS
#define BARS 1
#endif
#ifndef NCOPY
#define NCOPY 1
#endif
#ifndef DUPS
#define DUPS 1
#endif
#ifndef FORCES
#define FORCES 1
#endif
#ifndef RENEWALS
#define RENEWALS 1
#endif
#ifndef PAUSES
#define PAUSES 0
#endif
#ifndef RFAULTS
#define RFAULTS 0
#endif
#ifndef WRITES
#define WRITES 0
#endif
#ifndef TIMED
#define TIMED 0
#endif
#ifndef ACKC
#define ACKC NC
#endif
#endif
#if SCENARIO == TIME
#ifndef LOSSES
#define LOSSES 0
#endif
#ifndef CA
#define CA 2
#endif
#ifndef TTL
#define TTL 3
#endif
#ifndef NC
#define NC 2
#endif
#ifndef ATT0
#define ATT0 1
#endif
#ifndef ATT1
#define ATT1 1
#endif
#ifndef BARS
#define BARS 2
#endif
#ifndef NCOPY
#define NCOPY 1
#endif
#ifndef DUPS
#define DUPS 1
#endif
#ifndef FORCES
#define FORCES 0
#endif
#ifndef RENEWALS
#define RENEWALS 1
#endif
#ifndef PAUSES
#define PAUSES 1
#endif
#ifndef RFAULTS
#define RFAULTS 0
#endif
#ifndef WRITES
#define WRITES 0
#endif
#ifndef TIMED
#define TIMED 1
#endif
#ifndef ACKC
#define ACKC NC
#endif
#endif
#if SCENARIO == LOSS
#ifndef LOSSES
#define LOSSES 7
#endif
#ifndef CA
#define CA 1
#endif
#ifndef TTL
#define TTL 2
#endif
#ifndef NC
#define NC 2
#endif
#ifndef ATT0
#define ATT0 1
#endif
#ifndef ATT1
#define ATT1 1
#endif
#ifndef BARS
#define BARS 2
#endif
#ifndef NCOPY
#define NCOPY 1
#endif
#ifndef DUPS
#define DUPS 0
#endif
#ifndef FORCES
#define FORCES 0
#endif
#ifndef RENEWALS
#define RENEWALS 1
#endif
#ifndef PAUSES
#define PAUSES 0
#endif
#ifndef RFAULTS
#define RFAULTS 1
#endif
#ifndef WRITES
#define WRITES 1
#endif
#ifndef TIMED
#define TIMED 0
#endif
#ifndef ACKC
#define ACKC 0
#endif
#endif
#if SCENARIO == TOKENS
#ifndef LOSSES
#define LOSSES 0
#endif
#ifndef CA
#define CA 1
#endif
#ifndef TTL
#define TTL 2
#endif
#ifndef NC
#define NC 2
#endif
#ifndef ATT0
#define ATT0 1
#endif
#ifndef ATT1
#define ATT1 1
#endif
#ifndef BARS
#define BARS 1
#endif
#ifndef NCOPY
#define NCOPY 1
#endif
#ifndef DUPS
#define DUPS 0
#endif
#ifndef FORCES
#define FORCES 0
#endif
#ifndef RENEWALS
#define RENEWALS 0
#endif
#ifndef PAUSES
#define PAUSES 0
#endif
#ifndef RFAULTS
#define RFAULTS 0
#endif
#ifndef WRITES
#define WRITES 1
#endif
#ifndef TIMED
#define TIMED 0
#endif
#ifndef ACKC
#define ACKC NC
#endif
#ifndef STRANGER
#define STRANGER 2
#endif
#ifndef SKEW
#define SKEW 1
#endif
#endif
#if SCENARIO == REPAIR
#ifndef LOSSES
#define LOSSES 0
#endif
#ifndef CA
#define CA 1
#endif
#ifndef TTL
#define TTL 2
#endif
#ifndef NC
#define NC 2
#endif
#ifndef ATT0
#define ATT0 1
#endif
#ifndef ATT1
#define ATT1 1
#endif
#ifndef BARS
#define BARS 1
#endif
#ifndef NCOPY
#define NCOPY 1
#endif
#ifndef DUPS
#define DUPS 0
#endif
#ifndef FORCES
#define FORCES 0
#endif
#ifndef RENEWALS
#define RENEWALS 0
#endif
#ifndef PAUSES
#define PAUSES 0
#endif
#ifndef RFAULTS
#define RFAULTS 0
#endif
#ifndef WRITES
#define WRITES 1
#endif
#ifndef TIMED
#define TIMED 0
#endif
#ifndef ACKC
#define ACKC NC
#endif
#ifndef STRANGER
#define STRANGER 1
#endif
#ifndef SECRET
#define SECRET 0
#endif
#ifndef SKEW
#define SKEW 2
#endif
#ifndef LAG
#define LAG 2
#endif
#ifndef REPAIRS
#define REPAIRS 1
#endif
#ifndef RCOPIES
#define RCOPIES 1
#endif
#endif
#if SCENARIO == RLOSS
#ifndef LOSSES
#define LOSSES 4
#endif
#ifndef CA
#define CA 1
#endif
#ifndef TTL
#define TTL 2
#endif
#ifndef NC
#define NC 2
#endif
#ifndef ATT0
#define ATT0 1
#endif
#ifndef ATT1
#define ATT1 1
#endif
#ifndef BARS
#define BARS 1
#endif
#ifndef NCOPY
#define NCOPY 1
#endif
#ifndef DUPS
#define DUPS 0
#endif
#ifndef FORCES
#define FORCES 0
#endif
#ifndef RENEWALS
#define RENEWALS 0
#endif
#ifndef PAUSES
#define PAUSES 0
#endif
#ifndef RFAULTS
#define RFAULTS 1
#endif
#ifndef WRITES
#define WRITES 1
#endif
#ifndef TIMED
#define TIMED 0
#endif
#ifndef ACKC
#define ACKC NC
#endif
#ifndef SKEW
#define SKEW 2
#endif
#ifndef LAG
#define LAG 2
#endif
#ifndef REPAIRS
#define REPAIRS 1
#endif
#ifndef RCOPIES
#define RCOPIES 0
#endif
#endif
#if SCENARIO == QGHOST
#ifndef NC
#define NC 2
#endif
#ifndef ATT0
#define ATT0 2
#endif
#ifndef ATT1
#define ATT1 2
#endif
#endif
#if SCENARIO == QDUP
#ifndef NC
#define NC 2
#endif
#ifndef ATT0
#define ATT0 1
#endif
#ifndef ATT1
#define ATT1 2
#endif
#ifndef DUPS
#define DUPS 1
#endif
#endif
#if SCENARIO == FIFO || SCENARIO == QGHOST || SCENARIO == QDUP
#ifndef LOSSES
#define LOSSES 0
#endif
#ifndef CA
#define CA 1
#endif
#ifndef TTL
#define TTL 2
#endif
#ifndef NC
#define NC 3
#endif
#ifndef ATT0
#define ATT0 1
#endif
#ifndef ATT1
#define ATT1 1
#endif
#ifndef BARS
#define BARS 1
#endif
#ifndef NCOPY
#define NCOPY 1
#endif
#ifndef DUPS
#define DUPS 0
#endif
#ifndef FORCES
#define FORCES 0
#endif
#ifndef RENEWALS
#define RENEWALS 0
#endif
#ifndef PAUSES
#define PAUSES 0
#endif
#ifndef RFAULTS
#define RFAULTS 0
#endif
#ifndef WRITES
#define WRITES 0
#endif
#ifndef TIMED
#define TIMED 1
#endif
#ifndef ACKC
#define ACKC NC
#endif
#ifndef QN
#define QN 3
#endif
#ifndef QTTL
#define QTTL 2
#endif
#endif
#if SCENARIO == SIM
#ifndef LOSSES
#define LOSSES 7
#endif
#ifndef CA
#define CA 2
#endif
#ifndef TTL
#define TTL 3
#endif
#ifndef NC
#define NC 3
#endif
#ifndef ATT0
#define ATT0 80
#endif
#ifndef ATT1
#define ATT1 80
#endif
#ifndef BARS
#define BARS 16
#endif
#ifndef NCOPY
#define NCOPY 2
#endif
#ifndef DUPS
#define DUPS 200
#endif
#ifndef FORCES
#define FORCES 20
#endif
#ifndef RENEWALS
#define RENEWALS 3
#endif
#ifndef PAUSES
#define PAUSES 20
#endif
#ifndef RFAULTS
#define RFAULTS 40
#endif
#ifndef WRITES
#define WRITES 1
#endif
#ifndef TIMED
#define TIMED 1
#endif
#ifndef ACKC
#define ACKC 0
#endif
#endif

#ifndef STRANGER
#define STRANGER 0
#endif
#ifndef SKEW
#define SKEW 1
#endif
#ifndef SECRET
#define SECRET 2
#endif
#ifndef LAG
#define LAG 0
#endif
#ifndef REPAIRS
#define REPAIRS 0
#endif
#ifndef RCOPIES
#define RCOPIES 0
#endif
#if LAG > SKEW
#error "the clock bound assumes the resource's clock within MaxSkew of the servers' (LAG <= SKEW)"
#endif

#define GH 2        /* ghosts a Locker remembers per key (ghosts.go: 8) */

#define RESTARTS ((LOSSES & 1) != 0)
#define FAILOVERS ((LOSSES & 2) != 0)
#define EVICTIONS ((LOSSES & 4) != 0)

/* ==== Commands ==== */
#define ACQ 1       /* acquire.lua */
#define REN 2       /* renew.lua */
#define REL 3       /* release.lua: Release, and the clean-up of an unknown acquire */
#define FRC 4       /* force.lua */
#define WRT 5       /* fence/scripts/write.lua, at the resource */

/* Owner tokens: Locker c's k-th attempt (k from 0) has token c*ATTMAX+k+1. */
#if ATT0 > ATT1
#define ATTMAX ATT0
#else
#define ATTMAX ATT1
#endif
#define ATTS(c) (c == 0 -> ATT0 : ATT1)
#define NTOK (NC * ATTMAX + 1)
#define OWNER(t) (((t) - 1) / ATTMAX)

/* The bar lists' marks (record.lua). */
#define SLASH 1     /* '/' ended without deleting the lock */
#define PLUS 2      /* '+' its own release or clean-up deleted the lock */
#define BANG 3      /* '!' an administrator took the lock from it */
#define TILDE 4     /* '~' answered contended */

/* Acquire replies. The contended ones ({0, pttl, replica}, queued
 * {2, pttl, place, replica}) also name the holder's replica: the text
 * after the last '@' of the lock's value, which no script branches on and
 * which is not modelled (a token is a number here); the conformance test
 * checks it against the lock Redis holds. */
#define R_ACQ 1     /* {1, fence} */
#define R_CONT 2    /* {0, pttl, replica} */
#define R_BARRED 3  /* {0, -3} */
#define R_ERR 4     /* an error: no fence record for a held lock */

/* Renewal replies (renew.lua's 1, 0, -1). */
#define RN_OK 1
#define RN_NO 2
#define RN_FORCED 3

typedef Cmd {
	byte op;     /* 0: the slot is free */
	byte cl;     /* the Locker that sent it (NC: the administrator) */
	byte tok;    /* owner token (FRC: the holder it names) */
	byte fen;    /* REN: the lease's fence; WRT: the write's token */
	byte ser;    /* ACQ: attempt serial; REN: renewal serial; WRT: the lease's mint */
	byte g[GH];  /* ACQ: the Locker's ghosts, oldest first (ARGV[6..]) */
	byte wait    /* ACQ: the attempt queues (FIFO; ARGV[4] > 0) */
};

/* Command slots: each Locker's command of each kind, the force, and the
 * copies the network made. */
#define SA(c) (c)
#define SR(c) (NC + (c))
#define SL(c) (2 * NC + (c))
#define SW(c) (3 * NC + (c))
#define SF (4 * NC)
#define SC(k) (4 * NC + 1 + (k))
#define NSLOT (4 * NC + 1 + NCOPY)
Cmd slot[NSLOT];

/* A command whose sender stopped waiting is lost in the network: only a
 * copy the network made (proctype network) arrives late. */
inline drop(s) {
	slot[s].op = 0; slot[s].cl = 0; slot[s].tok = 0; slot[s].fen = 0; slot[s].ser = 0;
	slot[s].wait = 0; slot[s].g[0] = 0; slot[s].g[1] = 0
}

/* ==== Redis ==== */
typedef Store {
	byte lock;        /* the lock key's owner token, 0: free */
	byte ttl;         /* TIMED: ticks until the lock key expires */
	byte fence;       /* the fence record's fence, 0: none */
	byte eT[BARS];    /* the ended list, newest first */
	byte eM[BARS];    /*   each one's mark */
	byte cT[BARS];    /* the contended list, newest first */
};
Store P;            /* the primary */
Store U;            /* LOSS: the primary before its last script: a replica a failover promotes */
byte T;             /* the servers' TIME in fence units: it never goes back */
#if LAG
byte TR;            /* the resource's TIME (its own Redis) as a script reads it (store_clock) */
#else
#define TR T
#endif
byte rfaults = RFAULTS;

/* ==== The Lockers ==== */
byte att[NC];       /* attempts made */
byte tok[NC];       /* the current attempt's (or lease's) owner token */
byte fen[NC];       /* the lease's fence */
byte valid[NC];     /* TIMED: ticks until the lease's cancel point */
byte age[NC];       /* TIMED: ticks since the awaited acquire was sent */
bit held[NC];       /* a lease Release has not ended */
bit live[NC];       /* its context is not cancelled */
bit wrote[NC];      /* the lease sent its write */
bit paused[NC];
byte areq[NC];      /* the attempt serial whose reply is awaited, 0: none */
byte arep[NC];      /* its reply */
byte arepf[NC];
byte ghost[NC * GH];/* ghosts.go: tokens whose end Redis may not have */
bit pending[NC];    /* a release or clean-up in flight (pendingReleases) */
byte ltok[NC];      /* its token */
byte lreq[NC];      /* the token whose release reply is awaited */
byte lrep[NC];      /* 1: released, 2: not held */
byte rser[NC];      /* renewals sent for the lease */
byte rreq[NC];      /* the renewal serial whose reply is awaited */
byte rrep[NC];
byte rage[NC];      /* TIMED: ticks since that renewal was sent */
byte dups = DUPS;
byte pauses = PAUSES;
byte forces = FORCES;
byte fwait;         /* the holder named by the force awaiting its reply */
byte frep;          /* 1: released, 2: not held */

/* The resource: write.lua's mark and the id of the write that set it. */
byte wmark;
byte wid;

/* REPAIRS: the operator's repair (proctype operator) */
#if REPAIRS
byte repairs = REPAIRS;
byte rcopies = RCOPIES;
byte rstep;         /* 0: nothing read; 1: the first read; 2: both; 3: a copy of the script in flight */
byte rseen;         /* the mark it read (the script's seen; 0: none) */
byte rminted;       /* the fence record's fence it read (0: none) */
#endif

/* TOKENS: a token is its fence, its scope (the key it was minted for) and
 * its origin (signed by a Locker holding the secret, or not). The model
 * names a token by how it was made; the resource reads only what the token
 * carries (SCOPED, SIGNED), the invariants only how it was made. */
#define MINTED 0    /* by a Locker for this key: its own write (every one), or a replay of it */
#define FOREIGN 1   /* by a Locker for another key: its scope, validly signed */
#define MADE 2      /* made up for this key: this key's scope (ScopeOf is public), no valid MAC */
#define SCOPED(o) ((o) != FOREIGN)  /* Scope == ScopeOf(lockNamespace, lockKey) */
#define SIGNED(o) ((o) != MADE)     /* a kid the store knows, and a MAC that verifies */
#define FAR 200     /* a fence far past anything minted in the run */
#define FLOOR 3     /* no token: an operator's repair set the mark (worig) */

/* write.lua's replies, and the refusals before the mark comparison */
#define W_STALE 0   /* {0, mark} */
#define W_DONE 1    /* {1, mark} */
#define W_AGAIN 2   /* {2, mark}: a copy of the write that set the mark */
#define W_AHEAD 3   /* {3, mark}: fence > TIME + MaxSkew, for an unsigned token (ErrAhead) */
#define W_FOREIGN 4 /* fence.policy: ErrForeign */
#define W_FORGED 5  /* fence.policy: ErrForged */

#if STRANGER
/* How the resource is configured, chosen at the start (init): with a
 * secret (fence.NewSecrets: every token must be signed) or without
 * (unsigned tokens, held to the clock bound). The Lockers sign when the
 * resource has the secret. */
bit secret;
byte swrites = STRANGER; /* the stranger's writes left */
#endif

/* ==== Spec: what the invariants read, never the protocol ==== */
bit ended[NTOK];    /* a bar was written for the token: its attempt ended */
bit dropped[NTOK];  /* its bar fell off its list under BARS newer ones of its kind, once */
bit excused[NTOK];  /* a restart or a failover may have lost its bar */
bit forced[NTOK];   /* force.lua took the lock from it */
bit endedl[NTOK];   /* a bar was written for the token since its last mint */
byte mintf[NTOK];   /* the fence of the token's last mint */
bit saw[NC];        /* a copy of the current attempt found another holder */
bit took[NC];       /* a copy of the current attempt held the lock */
bit reldel[NC];     /* a copy of the current release deleted the lock */
bit fdel;           /* a copy of the force deleted the lock */
bit lost[NC];       /* the lease's context was cancelled once */
bit overran[NC];    /* the lease lived past its key (a pause) */
bit rlost[NC];      /* Redis lost data while the Locker held or acquired */
byte maxf;          /* the largest fence minted */
byte mints;         /* LOSS: acquisitions so far, in order */
byte lmint[NC];     /* LOSS: the lease's place in that order */
byte umint;         /* LOSS: the mint of the record's fence (P) */
byte uumint;        /*   and of U's */
byte wmint;         /* LOSS: the mint of the lease whose write set the mark */
byte ackmax;        /* the largest fence the Locker with the ack counted */
#if STRANGER
byte worig;         /* TOKENS: how the token that set the mark was made (MINTED...) */
#endif
#if REPAIRS
#if !WRITES
#error "a repair is of the resource's mark: it needs the Lockers' writes"
#endif
bit repaired;       /* a run of the repair script set the mark */
byte rtime;         /* the servers' TIME T then (the last such run) */
bit wpost;          /* the mark was set by a write after that run */
#endif

/* Scratch of the server's steps, and the command it runs (not part of the
 * state: every step sets them before use and clears them after). */
hidden byte i, j, h, m, f, x;
hidden byte rep, repf;
hidden byte cop, ccl, ctok, cfen, cser, cwait, ccp, corg;
hidden byte cg[GH];

/* ==== Invariants: one inline per guarantee of RELIABILITY.md ==== */

/* Fences strictly increase per key, also across a restart or a failover
 * that lost the record: a new fence is above every fence minted before. */
inline fence_monotonic(fnew) {
	assert(fnew > maxf)
}

/* A fenced store takes a key's writes in the order of the leases that made
 * them: no write of an older lease is applied after a newer one's. */
inline no_stale_write(mint) {
	assert(mint > wmint)
}

/* No two Lockers' contexts are live at once for a key, except where the
 * fence alone protects: Redis lost the key (restart, failover), a client
 * paused past its cancel point, or an administrator forced the key free. */
#define OVERLAP_OK(o, c) (o == c || !live[o] || overran[o] || rlost[o] || rlost[c] || forced[tok[o]] || forced[tok[c]])
inline no_live_overlap(c) {
#if NC > 2
	assert(OVERLAP_OK(0, c) && OVERLAP_OK(1, c) && OVERLAP_OK(2, c))
#else
	assert(OVERLAP_OK(0, c) && OVERLAP_OK(1, c))
#endif
}

/* A lease whose context was cancelled stays lost: a renewal confirmed
 * after the cancel point does not revive it. */
inline lost_is_final(c) {
	assert(!lost[c])
}

/* An attempt that ended (answered contended, released, cleaned up, forced
 * out, barred as a ghost) cannot take the key later, unless BARS newer
 * ends of its kind pushed its bar out, or Redis lost it. */
inline ended_stays_ended(t) {
	assert(!ended[t] || dropped[t] || excused[t])
}

/* An end is final: a renewal succeeds only for the acquisition it was
 * sent for (the token's last, by its fence), and not once that one ended,
 * while Redis keeps its data. */
inline end_is_final(t, fn) {
	assert((mintf[t] == fn && !endedl[t]) || excused[t])
}

/* A Locker is never refused by one of its own ended attempts. */
inline never_refused_by_own(c, holder) {
	assert(OWNER(holder) != c || dropped[holder] || excused[holder])
}

/* Every reported result says what the server did, whichever copy of the
 * command answered: contended only if a copy of the attempt found another
 * holder or ended it; released only if a copy deleted the lock; not held
 * only if none did (or its mark fell off the bounded list, or Redis lost
 * it). */
inline result_matches_acquire(c) {
	assert(saw[c] || took[c])
}
inline result_matches_release(c, t, r) {
	assert((r == 1 && reldel[c]) || (r == 2 && (!reldel[c] || dropped[t] || excused[t])))
}
inline result_matches_force(t, r) {
	assert((r == 1 && fdel) || (r == 2 && (!fdel || dropped[t] || excused[t])))
}

/* A force release takes the key only from the holder it names. */
inline force_takes_named(holder, named) {
	assert(holder == named)
}

/* With WithReplicationAck, every fence a holder counted is on the replica
 * a failover promotes. */
inline ack_fence_replicated() {
	assert(U.fence >= ackmax)
}

/* The mark never holds a token minted for another key: a lease of key B
 * cannot fence key A's resource, with a secret or without. */
inline foreign_never_marks() {
	assert(worig != FOREIGN)
}

/* With a secret, the mark never holds a token no Locker minted: with
 * foreign_never_marks, the mark only holds fences a Locker minted for this
 * key (a replay of one is such a fence: a signature does not stop replays). */
inline forged_never_marks() {
	assert(!secret || worig != MADE)
}

/* Whatever set the mark, it is at most SKEW ahead of the servers' TIME
 * (the fence floor) when set: every lease acquired more than SKEW later
 * mints above it. Without a secret a stranger can set a mark no Locker
 * minted, but not one further ahead than that (a lease acquired before
 * that stays below it, for as long as it lives). */
inline mark_recoverable() {
	assert(wmark <= T + SKEW)
}

/* After an operator's repair set the mark back, a lease minted more than
 * SKEW after it is refused as stale only by a mark a write set after the
 * repair: the repair's mark is at most SKEW ahead of the servers' TIME,
 * below every fence minted more than SKEW later, and whatever stood
 * before it (a stranger's mark, one far ahead) is gone. A lease minted
 * within SKEW after the repair may be refused by its mark, as by any mark
 * the clock bound lets through. The model's fence is the servers' TIME
 * at its mint (T counts the mints), so the lease's fence says when it
 * was minted. */
inline repair_unblocks(fn) {
	assert(!repaired || fn <= rtime + SKEW || wpost)
}

/* ==== FIFO: the wait queue, the hand-off and their checks ====
 *
 * A waiting acquire enqueues its owner token in the script that finds the
 * key held, and waits for the key to be handed to it: a release (or a
 * leave, a force, or any script that finds the lock expired) gives the key
 * to the queue's first live entry, minting its fence as acquire.lua does,
 * and publishes the grant (owner, fence) to the waiter's Locker alone
 * (the grant channel its enqueue stored). An entry expires QTTL ticks
 * after the script that set or refreshed it; the waiter refreshes it,
 * and a refresh answers waiting, granted (with the fence) or gone. The
 * waiter counts its validity from the send of its last script answered
 * waiting, which ran before the grant. The checks below are FIFO's
 * (README.md, "The wait queue"); they read only the spec's record of the
 * waiters (wq, wl, qseq), not the queue. */
#define QRF 6       /* the refresh script */
#define LVE 7       /* the leave: release.lua, sent by a waiter that gives up */
#define R_QUEUED 5  /* acquire: {2, pttl, place, replica}: held by another, owner enqueued */
#define QW 1        /* refresh: waiting, {2, pttl, replica} (the entry's expiry is pushed back) */
#define QG 2        /* refresh: granted, {fence} */
#define QX 3        /* refresh: gone (no entry, and the key is not its) */
#define QUEUED 4    /* Acquire: enqueued, until granted, gone or given up */

#if QN
#if WRITES || RFAULTS || NCOPY > 1
#error "FIFO models neither the resource's writes, nor losses, nor two copies"
#endif
/* Redis: the queue, oldest first; each entry's ticks until it expires */
byte qt[QN];
byte qx[QN];
byte qn;
/* The waiter (lease/acquire.go, FIFO) */
bit queued[NC];     /* in the state QUEUED */
byte wage[NC];      /* ticks since the send of its last script answered waiting (at most CA) */
bit qreq[NC];       /* a refresh awaits its reply */
byte qrep[NC];      /* its reply (QW, QG, QX) */
byte qrepf[NC];
byte qage[NC];      /* ticks since that refresh was sent (at most CA) */
byte gtok[NC];      /* a grant message on its way: the owner token */
byte gfen[NC];      /*   and the fence */
bit lleave[NC];     /* the end the background sends is a leave */
/* Spec: the waiters as they were answered */
bit wq[NTOK];       /* answered waiting, and not yet granted, gone or left */
byte wl[NTOK];      /* ticks until its entry expires, as last set */
byte qseq[NTOK];    /* its place in arrival order */
bit noreply[NTOK];  /* its end (a leave, a release, a clean-up) got no reply */
bit requeued[NTOK]; /* queued again by a late copy, its '~' bar pushed out */
byte nseq;
hidden byte y, z;
#define LIVE(t) (wq[t] && wl[t] > 0)

/* First come, first served: a mint (a grant, or an acquire that found
 * the key free) goes to the earliest live waiter; no waiter that came
 * earlier and is still live is passed over. An acquire of a waiter-less
 * token passes over none. */
inline fifo_first(g) {
	z = 1;
	do
	:: z < NTOK ->
		assert(z == g || !LIVE(z) || (LIVE(g) && qseq[z] > qseq[g]));
		z++
	:: else -> break
	od;
	z = 0
}

/* Every grant goes to an attempt its client awaits (its acquire's reply,
 * or queued on it), holds a lease under (a late copy of its acquire
 * queued it after its lock expired: its Release ends the grant), or is
 * ending (a leave or a clean-up in flight, or one that got no reply,
 * whose grant then goes unused for a TTL at worst): never to one its
 * client gave up for another, which nobody would use, unless BARS newer
 * ends pushed its bar out (a late copy then queues it, as
 * ended_stays_ended allows it the key). */
inline grant_awaited(t) {
	z = OWNER(t);
	assert((tok[z] == t && (areq[z] != 0 || queued[z] || held[z])) || ltok[z] == t || noreply[t] || dropped[t]);
	z = 0
}

/* ... and a client gives an attempt up (answered contended or barred)
 * only when it holds nothing and has no entry a hand-off could grant. */
inline dropped_holds_nothing(t) {
	qfind(t);
	assert(P.lock != t && i == QN);
	i = 0
}

/* No lost key: after every script, while a live waiter waits, the key is
 * held, and not by an attempt that ended (released, left). */
inline no_lost_key() {
	z = 1;
	do
	:: z < NTOK ->
		assert(!LIVE(z) || (P.lock != 0 && !endedl[P.lock]));
		z++
	:: else -> break
	od;
	z = 0
}

/* A live lease's cancel point comes before its key's expiry on the
 * servers' clock, unless its client is paused: a granted waiter's too,
 * whose validity counts from a send before the grant. Not for a token a
 * late copy queued again once BARS newer contended attempts pushed its
 * bar out (README.md, "The wait queue"). */
inline cancel_before_expiry(c) {
	assert(!live[c] || paused[c] || overran[c] || requeued[tok[c]] || (P.lock == tok[c] && valid[c] < P.ttl))
}
#endif

/* ==== The step lines the conformance test replays ==== */
inline print_state() {
	printf(" | lock=%d fence=%d e=", P.lock, P.fence);
	j = 0;
	do
	:: j < BARS && P.eT[j] != 0 -> printf("%d.%d,", P.eM[j], P.eT[j]); j++
	:: else -> break
	od;
	printf(" c=");
	j = 0;
	do
	:: j < BARS && P.cT[j] != 0 -> printf("%d,", P.cT[j]); j++
	:: else -> break
	od;
#if QN
	printf(" q=");
	j = 0;
	do
	:: j < qn -> printf("%d.%d,", qt[j], qx[j]); j++
	:: else -> break
	od;
#endif
	printf("\n");
	j = 0
}

/* ==== record.lua: the bar lists ==== */

/* endMark(owner): the mark owner ended with, or 0 (in m). */
inline endMark(o) {
	m = 0;
	j = 0;
	do
	:: j < BARS ->
		if
		:: P.eT[j] == o && P.eM[j] != TILDE -> m = P.eM[j]
		:: else -> skip
		fi;
		j++
	:: else -> break
	od;
	j = 0
}

/* isBarred(owner): on either list (in h). */
inline isBarred(o) {
	h = 0;
	j = 0;
	do
	:: j < BARS ->
		if
		:: P.eT[j] == o || P.cT[j] == o -> h = 1
		:: else -> skip
		fi;
		j++
	:: else -> break
	od;
	j = 0
}

/* push(without(list, owner), owner) on the ended list: owner moves to the
 * front with mark mk; a full list drops its oldest token. kind is what is
 * pushed (an end, or TILDE where the mutant shares the list). */
inline pushEnded(o, mk, kind) {
	j = 0;
	do
	:: j < BARS && P.eT[j] != o -> j++
	:: else -> break
	od;
	if
	:: j == BARS ->
		j = BARS - 1;
		if
		:: P.eT[j] != 0 -> dropped[P.eT[j]] = ((P.eM[j] == TILDE) == (kind == TILDE))
		:: else -> skip
		fi
	:: else -> skip
	fi;
	do
	:: j > 0 -> P.eT[j] = P.eT[j - 1]; P.eM[j] = P.eM[j - 1]; j--
	:: else -> break
	od;
	P.eT[0] = o;
	P.eM[0] = mk
}

/* The same on the contended list. */
inline pushContended(o) {
	j = 0;
	do
	:: j < BARS && P.cT[j] != o -> j++
	:: else -> break
	od;
	if
	:: j == BARS ->
		j = BARS - 1;
		if
		:: P.cT[j] != 0 -> dropped[P.cT[j]] = 1
		:: else -> skip
		fi
	:: else -> skip
	fi;
	do
	:: j > 0 -> P.cT[j] = P.cT[j - 1]; j--
	:: else -> break
	od;
	P.cT[0] = o
}

/* barOwner(owner, mark): bars owner; on the ended list an owner keeps its
 * first mark, which barOwner returns (in m; 0 for TILDE). */
inline barOwner(o, mk) {
	ended[o] = 1;
	endedl[o] = 1;
	if
	:: mk == TILDE ->
#ifdef BARS_SHARED_LIST
		/* issue 13, found by the review of its fix: contended answers shared
		 * the one list of bars with ends, so a waiter's polls pushed a
		 * release's bar out within milliseconds. */
		pushEnded(o, TILDE, TILDE);
#else
		pushContended(o);
#endif
		m = 0
	:: else ->
		endMark(o);
		if
		:: m == 0 -> m = mk
		:: else -> skip
		fi;
		pushEnded(o, m, mk)
	fi
}

/* ==== The scripts: each runs as one atomic step of the server ==== */

/* endGhosts (acquire.lua): bars the Locker's ghosts (ARGV[6..]), deleting
 * the lock if one of them holds it. */
inline endGhosts() {
#ifdef OWN_GHOST_CONTENDS
	/* issue 24, defect 10: acquire ignored the ghosts it was sent, and a
	 * Locker was refused by its own unknown acquire whose clean-up ended
	 * unresolved. */
	skip
#else
	i = 0;
	do
	:: i < GH && cg[i] != 0 ->
		if
		:: P.lock != 0 && P.lock == cg[i] ->
			P.lock = 0;
			P.ttl = 0;
			barOwner(cg[i], PLUS)
		:: else ->
			barOwner(cg[i], SLASH)
		fi;
		i++
	:: else -> break
	od;
	i = 0
#endif
}

/* mint(t): the lock for t with a new fence (in f), max(last + 1, TIME);
 * acquire.lua, and the hand-off, which mints as it does. */
inline mint(t) {
	T++;
#ifdef INCR_WITHOUT_TIME_FLOOR
	/* RELIABILITY.md, "Why the fence is max(last + 1, server TIME in µs)":
	 * a counter alone starts again when the record is lost. */
	f = P.fence + 1;
#else
	f = T;
	if
	:: P.fence >= f -> f = P.fence + 1
	:: else -> skip
	fi;
#endif
	fence_monotonic(f);
	ended_stays_ended(t);
#if QN
	fifo_first(t);
#endif
	if
	:: f > maxf -> maxf = f
	:: else -> skip
	fi;
	P.fence = f;
	mintf[t] = f;
	endedl[t] = 0;
	P.lock = t;
	P.ttl = TTL
}

/* acquire.lua: KEYS lock, fence, queue, entries; ARGV owner, ttl,
 * retention, entry TTL (0: no queue), the Locker's grant channel,
 * ghosts... */
inline acquire_lua() {
	h = 0;
	x = 0;
	if
	:: P.lock != 0 && P.lock == ctok ->
		/* a copy of this attempt ran first: the same fence */
		if
		:: P.fence == 0 -> rep = R_ERR
		:: else -> rep = R_ACQ; repf = P.fence; x = umint
		fi
	:: else ->
		/* ghostHolds: one of the Locker's ghosts holds the lock */
		h = 0;
#ifndef OWN_GHOST_CONTENDS
		h = (P.lock != 0 && (P.lock == cg[0] || P.lock == cg[1]));
#endif
		if
		:: P.lock != 0 && !h ->
			endGhosts();
			x = P.lock;
#ifndef NO_CONTENDED_BAR
			/* issue 13, defect 2: an attempt answered contended was not
			 * barred; a late copy of it took the key after the holder
			 * left, though the caller had its answer. */
			barOwner(ctok, TILDE);
#endif
			rep = R_CONT
		:: else ->
			/* the key is free, or a ghost holds it. The script reads the
			 * record and TIME for the fence here, then ends the ghosts
			 * (their bars do not change the fence): the model mints
			 * below, once the token is known not to be barred. */
			endGhosts();
			isBarred(ctok);
			if
			:: h -> rep = R_BARRED
			:: else ->
				mint(ctok);
#if WRITES
				mints++;
				umint = mints;
				x = mints;
#endif
				rep = R_ACQ;
				repf = f
			fi
		fi
	fi;
	acquire_reply()
}

/* What the current attempt's copies did (spec), and the reply. */
inline acquire_reply() {
	if
	:: cser == att[ccl] ->
		if
		:: rep == R_CONT || rep == R_QUEUED -> saw[ccl] = 1; never_refused_by_own(ccl, x)
		:: rep == R_ACQ -> took[ccl] = 1
		:: else -> skip
		fi;
		if
		:: areq[ccl] == cser ->
			arep[ccl] = rep;
			arepf[ccl] = repf;
#if WRITES
			if
			:: rep == R_ACQ -> lmint[ccl] = x
			:: else -> skip
			fi;
#endif
			skip
		:: else -> skip
		fi
	:: else -> skip
	fi;
	printf("@acquire cp=%d c=%d t=%d w=%d g=%d,%d, r=%d f=%d", ccp, ccl, ctok, cwait, cg[0], cg[1], rep, repf);
	print_state()
}

#if QN
/* ==== FIFO's scripts: the queue, the hand-off, the refresh ==== */

/* An entry is expired once its ticks ran out (TIME past its expiry). */
#ifdef EXPIRED_NOT_SKIPPED
/* the hand-off grants the head, expired or not: a dead waiter's entry
 * holds the key for a TTL while a live one waits behind it */
#define EXPIRED(k) (0)
#else
#ifdef LIVE_SKIPPED
/* an expiry compared one tick early (<= for <): an entry still live is
 * dropped */
#define EXPIRED(k) (qx[k] <= 1)
#else
#define EXPIRED(k) (qx[k] == 0)
#endif
#endif

/* qremove(k): entry k leaves the queue; the rest keep their order. */
inline qremove(k) {
	y = k;
	do
	:: y + 1 < qn -> qt[y] = qt[y + 1]; qx[y] = qx[y + 1]; y++
	:: else -> break
	od;
	qn--;
	qt[qn] = 0;
	qx[qn] = 0;
	y = 0
}

/* qfind(t): t's entry (in i; QN: none). */
inline qfind(t) {
	i = 0;
	do
	:: i < qn && qt[i] != t -> i++
	:: else -> break
	od;
	if
	:: i == qn -> i = QN
	:: else -> skip
	fi
}

/* grant(k): the key goes to entry k, with a fence minted as acquire.lua
 * mints it, and the grant is published on the grant channel the entry
 * names, its waiter's Locker's (c=, the Locker that reads it): no other
 * Locker hears of it. */
inline grant(k) {
	h = qt[k];
	grant_awaited(h);
	qremove(k);
#ifdef GRANT_REUSES_FENCE
	/* the grant sets the lock to the waiter and hands it the fence of
	 * the record, the releaser's, without minting */
	f = P.fence;
	fence_monotonic(f);
	fifo_first(h);
	P.lock = h;
	P.ttl = TTL;
#else
	mint(h);
#endif
	wq[h] = 0;
	wl[h] = 0;
	gtok[OWNER(h)] = h;
	gfen[OWNER(h)] = f;
	printf("@grant t=%d f=%d c=%d\n", h, f, OWNER(h));
	h = 0
}

/* handoff: the key, free, goes to the queue's first live entry; expired
 * entries before it are dropped. Without one, the key stays free. */
inline handoff() {
	do
	:: qn == 0 -> break
	:: qn > 0 && EXPIRED(0) -> qremove(0)
	:: qn > 0 && !EXPIRED(0) ->
#ifdef GRANT_PASSES_HEAD
		/* the grant goes to the entry after the head, if it is live */
		if
		:: qn > 1 && !EXPIRED(1) -> i = 1
		:: else -> i = 0
		fi;
		grant(i);
#else
		grant(0);
#endif
		i = 0;
		break
	od
}

/* Every script that touches the queue first hands the key on if its lock
 * is gone (expired): the expiry a waiter's next refresh notices. */
inline notice() {
	if
	:: P.lock == 0 -> handoff()
	:: else -> skip
	fi
}

/* enqueue(t): t joins the queue's tail, live for QTTL ticks (acquire.lua,
 * in the step that answers it contended); barred '~' as a contended
 * attempt is, so that a late copy of the attempt can neither take the key
 * nor enter the queue again once its entry is gone. The bar is no end:
 * the entry, not the bar lists, says who the hand-off may grant. */
inline enqueue(t) {
	assert(qn < QN);
	qt[qn] = t;
	qx[qn] = QTTL;
	qn++;
	pushContended(t)
}

/* dropGhostEntries (acquire.lua's endGhosts): the ghosts' entries leave
 * the queue, the others keep their order, before a hand-off could grant
 * a ghost: its Locker gave up on it, and the bar just written ended it. */
inline dropGhostEntries() {
	y = 0;
	z = 0;
	do
	:: y < qn && (qt[y] == cg[0] || qt[y] == cg[1]) -> y++
	:: y < qn && qt[y] != cg[0] && qt[y] != cg[1] -> qt[z] = qt[y]; qx[z] = qx[y]; z++; y++
	:: else -> break
	od;
	do
	:: qn > z -> qn--; qt[qn] = 0; qx[qn] = 0
	:: else -> break
	od;
	wq[cg[0]] = 0;
	wq[cg[1]] = 0;
	y = 0;
	z = 0
}

#ifdef OWN_GRANT_BARRED
/* the hand-off in an acquire grants the entry a copy of the same attempt
 * queued, and the acquire answers barred: nobody uses the key for a TTL */
#define OWN_GRANT (0)
#else
#define OWN_GRANT (P.lock == ctok)
#endif
#ifdef QUEUED_COPY_BARRED
/* a copy of an attempt another copy queued is answered barred: its client
 * tries anew behind an entry nobody refreshes, which a hand-off grants */
#define QUEUED_COPY (0)
#else
#define QUEUED_COPY (i < QN)
#endif

/* acquire.lua with the queue: a key held by another enqueues a waiting
 * caller; a key a ghost held, or one expired, goes to the queue first. */
inline acquire_fifo() {
	h = 0;
	x = 0;
	if
	:: P.lock != 0 && P.lock == ctok ->
		rep = R_ACQ;
		repf = P.fence
	:: else ->
		endGhosts();
#ifndef GHOST_ENTRY_KEPT
		/* without it, the entry of a leave that got no reply stays
		 * queued, and the hand-off below grants the ghost just barred */
		dropGhostEntries();
#endif
		notice();
		if
		:: P.lock != 0 && OWN_GRANT ->
			/* the hand-off just above granted the entry a copy of this
			 * attempt queued (its reply lost): the attempt holds the key */
			rep = R_ACQ;
			repf = P.fence
		:: P.lock != 0 && !OWN_GRANT && cwait ->
			x = P.lock;
			isBarred(ctok);
			if
			:: h ->
				/* barred: a late copy, or a copy of an attempt another
				 * copy queued, whose entry stays (the first's reply may
				 * be lost, and this one answers for it: already queued) */
				qfind(ctok);
				if
				:: QUEUED_COPY -> rep = R_QUEUED; repf = 0
				:: else -> rep = R_BARRED
				fi;
				i = 0
			:: else ->
				/* a token queued before, whose bar BARS newer contended
				 * attempts pushed out (README.md, "The wait queue": the
				 * bar at enqueue holds while among the 16 newest) */
				requeued[ctok] = (qseq[ctok] != 0);
#ifndef ENQUEUE_APART
				enqueue(ctok);
#endif
				wq[ctok] = 1;
				wl[ctok] = QTTL;
				nseq++;
				qseq[ctok] = nseq;
				rep = R_QUEUED;
				repf = qn
			fi
		:: P.lock != 0 && !OWN_GRANT && !cwait ->
			x = P.lock;
			barOwner(ctok, TILDE);
			rep = R_CONT
		:: P.lock == 0 ->
			isBarred(ctok);
			if
			:: h -> rep = R_BARRED
			:: else -> mint(ctok); rep = R_ACQ; repf = f
			fi
		fi
	fi;
	acquire_reply()
}

/* refresh: KEYS lock, fence, queue; ARGV owner, the waiter's TTL. */
inline refresh_lua() {
	notice();
	if
	:: P.lock != 0 && P.lock == ctok -> rep = QG; repf = P.fence
	:: else ->
		qfind(ctok);
		if
		:: i < QN && !EXPIRED(i) -> qx[i] = QTTL; wl[ctok] = QTTL; rep = QW
		:: i < QN && EXPIRED(i) -> qremove(i); wq[ctok] = 0; rep = QX
#ifdef ENQUEUE_APART
		/* the waiter's own enqueue, after the contended answer: it
		 * appends, whatever happened to the key in between */
		:: i == QN -> enqueue(ctok); wl[ctok] = QTTL; rep = QW
#else
		:: i == QN -> wq[ctok] = 0; rep = QX
#endif
		fi;
		i = 0
	fi;
	if
	:: qreq[ccl] && tok[ccl] == ctok -> qrep[ccl] = rep; qrepf[ccl] = repf
	:: else -> skip
	fi;
	printf("@refresh cp=%d t=%d r=%d f=%d", ccp, ctok, rep, repf);
	print_state()
}
#endif

/* renew.lua: KEYS lock, fence; ARGV owner, ttl, retention, fence. It
 * reads no queue, and so hands nothing on: a lock that expired under its
 * lease is handed on by the next script that touches the queue, a
 * waiter's refresh at the latest. */
inline renew_lua() {
	if
	:: P.lock != 0 && P.lock == ctok ->
		if
#ifdef FORCE_UNDONE_BY_LATE_COPY
		/* issue 24, defect 5: renew compared the owner token only, so a
		 * late copy of a forced-out holder's acquire, which retook the key
		 * once sixteen newer ends had pushed its bar out, gave the holder
		 * its renewals back. */
		:: true ->
#else
		:: P.fence == cfen ->
#endif
			end_is_final(ctok, cfen);
			P.ttl = TTL;
			rep = RN_OK
		:: P.fence != 0 && P.fence != cfen -> rep = RN_NO
		:: P.fence == 0 ->
			/* the record lost its fence (evicted, deleted) while the lock
			 * holds our token: no acquisition came between, and the
			 * renewal writes the fence back (26e8fcc) */
			end_is_final(ctok, cfen);
			P.fence = cfen;
			P.ttl = TTL;
			rep = RN_OK
		fi
	:: else ->
		endMark(ctok);
		if
		:: m == BANG -> rep = RN_FORCED
		:: else -> rep = RN_NO
		fi
	fi;
	if
	:: rreq[ccl] == cser && tok[ccl] == ctok -> rrep[ccl] = rep
	:: else -> skip
	fi;
	printf("@renew cp=%d t=%d f=%d r=%d", ccp, ctok, cfen, rep);
	print_state()
}

/* release.lua: KEYS lock, fence, queue, entries; ARGV owner, retention. */
inline release_lua() {
	if
#ifdef LEAVE_KEEPS_GRANT
	/* a leave removes the waiter's entry only: a key granted to it before
	 * the leave ran stays with it until its TTL */
	:: P.lock != 0 && P.lock == ctok && cop != LVE ->
#else
	:: P.lock != 0 && P.lock == ctok ->
#endif
		P.lock = 0;
		P.ttl = 0;
#ifndef RELEASE_WITHOUT_BAR
		/* issue 13, defect 10 (and e407541): without the bar, a late copy
		 * of the released or cleaned-up attempt's acquire took the key
		 * again. */
		barOwner(ctok, PLUS);
#endif
		rep = 1;
		if
		:: lreq[ccl] == ctok -> reldel[ccl] = 1
		:: else -> skip
		fi
	:: else ->
#ifndef RELEASE_WITHOUT_BAR
		barOwner(ctok, SLASH);
#endif
#ifdef RESENT_RESULT_LIES
		/* issue 24, defect 6: a re-sent release (or clean-up) answered from
		 * the lock alone: "not held", though its first copy deleted it. */
		rep = 2
#else
		if
		:: m == PLUS -> rep = 1
		:: else -> rep = 2
		fi
#endif
	fi;
#if QN
	/* the leave: the attempt's entry goes; then the key, free, is handed
	 * on (the release's, or an expiry's) */
	qfind(ctok);
	if
	:: i < QN -> qremove(i)
	:: else -> skip
	fi;
	i = 0;
	wq[ctok] = 0;
	notice();
#endif
	if
	:: lreq[ccl] == ctok -> lrep[ccl] = rep
	:: else -> skip
	fi;
	printf("@release cp=%d t=%d r=%d", ccp, ctok, rep);
	print_state()
}

/* force.lua: KEYS lock, fence, queue, entries; ARGV retention, holder. */
inline force_lua() {
	x = P.lock;
	rep = 2;
	if
#ifdef FORCE_NAMES_NO_HOLDER
	/* commit 50fc69d: the script compared as many hex digits as the caller
	 * sent, so an empty or short holder matched whoever held the key. */
	:: P.lock != 0 ->
#else
	:: P.lock != 0 && P.lock == ctok ->
#endif
		force_takes_named(P.lock, ctok);
		forced[P.lock] = 1;
		barOwner(P.lock, BANG);
		P.lock = 0;
		P.ttl = 0;
		fdel = 1;
#if QN
		notice();
#endif
		rep = 1
	:: else ->
#ifndef RESENT_RESULT_LIES
		/* a copy answers for the first: the holder's '!' mark */
		endMark(ctok);
		if
		:: m == BANG -> rep = 1; x = ctok
		:: else -> skip
		fi
#else
		skip
#endif
	fi;
	if
	:: fwait != 0 && fwait == ctok -> frep = rep
	:: else -> skip
	fi;
	printf("@force cp=%d h=%d r=%d who=%d f=%d", ccp, ctok, rep, x, P.fence);
	print_state()
}

/* ==== proctype redis: the server runs one script at a time, in the order
 * the network delivers the commands (any: a slot is a command in flight) ==== */

inline load(s) {
	cop = slot[s].op; ccl = slot[s].cl; ctok = slot[s].tok; cfen = slot[s].fen;
	cser = slot[s].ser; cwait = slot[s].wait; cg[0] = slot[s].g[0]; cg[1] = slot[s].g[1];
	drop(s)
}

inline unload() {
	cop = 0; ccl = 0; ctok = 0; cfen = 0; cser = 0; cwait = 0; ccp = 0; cg[0] = 0; cg[1] = 0; corg = 0;
#if LAG
	TR = 0;
#endif
	i = 0; j = 0; h = 0; m = 0; f = 0; x = 0; rep = 0; repf = 0
}

/* LOSS: U keeps the primary as it was before its last script. */
inline before_script() {
#if RFAULTS
	if
	:: FAILOVERS && rfaults > 0 -> copyStore(U, P); uumint = umint
	:: else -> skip
	fi
#else
	skip
#endif
}

/* The server serves slot k, any slot that holds a command (WRT goes to
 * the resource). */
#define PICK(s) :: slot[s].op != 0 && slot[s].op != WRT -> k = s

inline copyStore(d, s2) {
	d.lock = s2.lock; d.ttl = s2.ttl; d.fence = s2.fence;
	j = 0;
	do
	:: j < BARS -> d.eT[j] = s2.eT[j]; d.eM[j] = s2.eM[j]; d.cT[j] = s2.cT[j]; j++
	:: else -> break
	od;
	j = 0
}

inline clearStore(d) {
	d.lock = 0; d.ttl = 0; d.fence = 0;
	j = 0;
	do
	:: j < BARS -> d.eT[j] = 0; d.eM[j] = 0; d.cT[j] = 0; j++
	:: else -> break
	od;
	j = 0
}

proctype redis() {
	byte k;
end:
	do
	:: atomic {
		if
		PICK(SA(0))
		PICK(SA(1))
		PICK(SR(0))
		PICK(SR(1))
		PICK(SL(0))
		PICK(SL(1))
		PICK(SF)
		PICK(SC(0))
#if NC > 2
		PICK(SA(2))
		PICK(SR(2))
		PICK(SL(2))
#endif
#if NCOPY > 1
		PICK(SC(1))
#endif
		fi;
		d_step {
			before_script();
			ccp = (k >= SC(0));
			load(k);
			k = 0;
			if
#if QN
			/* one copy of each script: a d_step's length is bounded */
			:: cop == ACQ -> acquire_fifo()
			:: cop == QRF -> refresh_lua()
			:: cop == REL || cop == LVE -> release_lua()
#else
			:: cop == ACQ -> acquire_lua()
			:: cop == REL -> release_lua()
#endif
			:: cop == REN -> renew_lua()
			:: cop == FRC -> force_lua()
			fi;
#if QN
			no_lost_key();
#endif
			unload()
		}
	}
	od
}

/* ==== proctype network: delay, reordering and loss are the order and the
 * choice of slots the server runs; the network makes the late copies (a
 * go-redis re-send on a new connection, a command left in a stalled
 * server's socket buffer). A copy's reply reaches the client only while it
 * still awaits that command. ==== */
inline copyTo(s, d) {
	slot[d].op = slot[s].op; slot[d].cl = slot[s].cl; slot[d].tok = slot[s].tok;
	slot[d].fen = slot[s].fen; slot[d].ser = slot[s].ser; slot[d].wait = slot[s].wait;
	slot[d].g[0] = slot[s].g[0]; slot[d].g[1] = slot[s].g[1]
}

#if NCOPY > 1
#define COPY(s) \
	:: d_step { dups > 0 && slot[s].op != 0 && slot[SC(0)].op == 0 -> copyTo(s, SC(0)); dups-- } \
	:: d_step { dups > 0 && slot[s].op != 0 && slot[SC(0)].op != 0 && slot[SC(1)].op == 0 -> copyTo(s, SC(1)); dups-- }
#else
#define COPY(s) :: d_step { dups > 0 && slot[s].op != 0 && slot[SC(0)].op == 0 -> copyTo(s, SC(0)); dups-- }
#endif

proctype network() {
end:
	do
	COPY(SA(0))
	COPY(SA(1))
	COPY(SR(0))
	COPY(SR(1))
	COPY(SL(0))
	COPY(SL(1))
	COPY(SF)
#if WRITES
	COPY(SW(0))
	COPY(SW(1))
#endif
#if NC > 2
	COPY(SA(2))
	COPY(SR(2))
	COPY(SL(2))
	COPY(SW(2))
#endif
	:: dups == 0 -> break
	od
}

/* ==== proctype resource: the fenced store (fence/scripts/write.lua) ==== */

/* What a store checks of a token before the mark (issue 26), in
 * fence.policy's order: with a secret, the signature; the scope; without a
 * secret, the clock bound (write.lua's ARGV[4]) against the store's TIME,
 * which the model takes to be the servers' T. The signature and the scope
 * are checked in Go: they read no stored state, so where they run beside
 * the script does not matter. A refusal (in rep) moves nothing. */
inline check_token() {
#ifndef NO_ORIGIN_CHECK
	/* with a secret, a token without a valid MAC is ErrForged (the mutant
	 * takes every token as signed, and so as exempt from the clock bound) */
	if
	:: secret && !SIGNED(corg) -> rep = W_FORGED
	:: else -> skip
	fi;
#endif
#ifndef NO_SCOPE_CHECK
	/* a scope other than ScopeOf(lockNamespace, lockKey) is ErrForeign */
	if
	:: rep == W_STALE && !SCOPED(corg) -> rep = W_FOREIGN
	:: else -> skip
	fi;
#endif
#ifndef NO_AHEAD_CHECK
	/* without a secret, a fence past the store's TIME + MaxSkew is
	 * ErrAhead: no Locker can have minted it yet */
	if
	:: rep == W_STALE && !secret && cfen > TR + SKEW -> rep = W_AHEAD
	:: else -> skip
	fi;
#endif
	skip
}

inline write_lua() {
	x = wmark;
	rep = W_STALE;
#if STRANGER
	check_token();
#endif
	if
	:: rep != W_STALE -> skip
	:: rep == W_STALE && wmark >= cfen ->
		if
		:: wmark == cfen && wid == ctok -> rep = W_AGAIN
		:: else -> rep = W_STALE
		fi;
#if REPAIRS
		if
		:: rep == W_STALE && ccl < NC -> repair_unblocks(cfen)
		:: else -> skip
		fi;
#endif
		skip
	:: else ->
#if WRITES
		if
		:: ccl < NC -> no_stale_write(cser); wmint = cser
		:: else -> skip /* a stranger's write carries no mint */
		fi;
#endif
		wmark = cfen;
		wid = ctok;
		rep = W_DONE;
#if REPAIRS
		wpost = repaired;
#endif
#if STRANGER
		worig = corg;
		foreign_never_marks();
		forged_never_marks();
		mark_recoverable();
#endif
		skip
	fi;
#if STRANGER
	/* the Lockers' writes as ever (the conformance test replays them);
	 * the stranger's, and a refusal before the mark, as @token lines */
	if
	:: ccl < NC && rep <= W_AGAIN -> printf("@write f=%d id=%d r=%d m=%d\n", cfen, ctok, rep, x)
	:: else -> printf("@token s=%d o=%d f=%d id=%d r=%d m=%d now=%d\n", secret, corg, cfen, ctok, rep, x, TR)
	fi
#else
	printf("@write f=%d id=%d r=%d m=%d\n", cfen, ctok, rep, x)
#endif
}

/* The resource's clock as a script reads it: anywhere from LAG behind
 * the servers' TIME up to TIME, at each read (its own Redis's TIME, the
 * host's clock, need not be monotonic). Read just before the script's
 * d_step (which would take the first choice only); unload clears it. */
inline store_clock() {
#if LAG
	if
	:: T > LAG -> TR = T - LAG
	:: else -> TR = 0
	fi;
	do
	:: TR < T -> TR++
	:: break
	od
#else
	skip
#endif
}

/* write.lua reads it for the clock bound: an unsigned token's */
inline write_clock() {
#if LAG && STRANGER
	if
	:: !secret -> store_clock()
	:: else -> skip
	fi
#else
	skip
#endif
}

#if LAG
#define STORE(s) :: atomic { slot[s].op == WRT -> write_clock(); d_step { load(s); write_lua(); unload() } }
#else
#define STORE(s) :: d_step { slot[s].op == WRT -> load(s); write_lua(); unload() }
#endif

proctype resource() {
end:
	do
	STORE(SW(0))
	STORE(SW(1))
#if NC > 2
	STORE(SW(2))
#endif
	STORE(SC(0))
#if NCOPY > 1
	STORE(SC(1))
#endif
	od
}

/* ==== proctype stranger: a caller that can reach the resource (TOKENS)
 * and writes with tokens it made up: another key's real token, a forged
 * one for this key, a replay of one a Locker minted for this key ====
 *
 * Its write is made and run at the resource in one step: since it may
 * pick any fence, one it made earlier and the resource ran later is one it
 * could have made then. It picks above the mark: a fence at or below it is
 * refused whatever else it is, and moves nothing. */
#if STRANGER
#if NTOK != 3
#error "the stranger replays the tokens of two Lockers of one attempt each"
#endif
proctype stranger() {
	byte o, fv; /* the token: how it was made, its fence */
end:
	do
	:: atomic { swrites > 0 ->
		if
		:: /* key B's token: validly signed (a Locker minted it for B),
		    * a fence up to a few past TIME (B's record, B's clock) */
			o = FOREIGN;
			select(fv : wmark + 1 .. T + SKEW + 1)
		:: /* forged for this key: no valid MAC, any fence */
			o = MADE;
			if
			:: select(fv : wmark + 1 .. T + SKEW + 1)
			:: fv = FAR
			fi
		:: /* a replay of a token it saw: each attempt's last mint */
			mintf[1] > wmark -> o = MINTED; fv = mintf[1]
		:: mintf[2] > wmark -> o = MINTED; fv = mintf[2]
		fi;
		write_clock();
		d_step {
			/* RedisStore.Write: a write id of its own, one per call */
			ccl = NC + 1; cop = WRT; ctok = NTOK + swrites; cfen = fv; corg = o;
			swrites--;
			o = 0; fv = 0;
			write_lua();
			unload()
		} }
	:: swrites == 0 -> break
	od
}
#endif

/* ==== proctype Acquire: one Locker's Acquire calls and the leases they
 * return (lease/acquire.go; the work's final write is Lease.Commit,
 * commit.go; a lease ends with Release or ReleaseAsync, release.go) ==== */

/* One attempt: an owner token of its own, the Locker's ghosts of the key,
 * and whether it queues (acquireArgs; FIFO's waiters). */
inline send_acquire(c, newcall) {
#ifdef REUSE_OWNER_TOKEN
	/* issue 13, defect 2: WithWait reused the first attempt's owner token
	 * on every attempt. */
	if
	:: newcall -> tok[c] = c * ATTMAX + att[c] + 1
	:: else -> skip
	fi;
#else
	tok[c] = c * ATTMAX + att[c] + 1;
#endif
	att[c]++;
	slot[SA(c)].op = ACQ;
	slot[SA(c)].cl = c;
	slot[SA(c)].tok = tok[c];
	slot[SA(c)].ser = att[c];
#if QN
	slot[SA(c)].wait = 1;
#endif
	slot[SA(c)].g[0] = ghost[c * GH];
	slot[SA(c)].g[1] = ghost[c * GH + 1];
	areq[c] = att[c];
	age[c] = 0;
	saw[c] = 0;
	took[c] = 0
}

/* ghosts.barred: a definite answer shows Redis has the ghosts' bars. */
inline forget_ghosts(c) {
	ghost[c * GH] = 0;
	ghost[c * GH + 1] = 0
}

/* ghosts.add: remember t, keeping the newest GH. */
inline add_ghost(c, t) {
	if
	:: ghost[c * GH] == 0 -> ghost[c * GH] = t
	:: ghost[c * GH] != 0 && ghost[c * GH + 1] == 0 -> ghost[c * GH + 1] = t
	:: else -> ghost[c * GH] = ghost[c * GH + 1]; ghost[c * GH + 1] = t
	fi
}

inline clear_reply(c) {
	areq[c] = 0; arep[c] = 0; arepf[c] = 0; age[c] = 0; saw[c] = 0; took[c] = 0
}

/* resolveUnknown: the clean-up runs release.lua with the acquire's token
 * in the background; the Locker's next Acquire of the key waits for it. */
inline resolve_unknown(c) {
	drop(SA(c));
	clear_reply(c);
	ltok[c] = tok[c];
	pending[c] = 1
}

inline become_live(c) {
	no_live_overlap(c);
	lost_is_final(c);
	live[c] = 1
}

/* pendingReleases.wait: an Acquire waits for the Locker's release or
 * clean-up of the key. */
#ifdef ACQUIRE_BEFORE_CLEANUP
/* issue 13, defect 10: an Acquire right after an unknown one did not wait
 * for its clean-up, found its own attempt holding the key and answered
 * contended. */
#define CLEANED_UP(c) (1)
#else
#define CLEANED_UP(c) (!pending[c])
#endif

#define IDLE 0      /* between Acquire calls */
#define WAITING 1   /* an attempt awaits its reply */
#define BACKOFF 2   /* answered contended, sleeping before the next attempt */
#define HOLDING 3   /* a lease, until Release */

#if QN
/* The waiter's state, cleared when it stops waiting. */
inline unqueue(c) {
	drop(SR(c));
	queued[c] = 0; wage[c] = 0; qreq[c] = 0; qrep[c] = 0; qrepf[c] = 0; qage[c] = 0;
	gtok[c] = 0; gfen[c] = 0
}

/* leave: the waiter gives up (its wait's end, its ctx); the leave runs in
 * the background, as a release does, and releases the key if it was
 * granted already. A leave without a reply leaves a ghost. */
inline leave(c) {
	unqueue(c);
	ltok[c] = tok[c];
	lleave[c] = 1;
	pending[c] = 1
}

/* take_grant(c, fv): the key is the waiter's, with fence fv, whether the
 * grant message or a refresh's answer said so. Its validity counts from
 * the send of its last script answered waiting, which ran before the
 * grant; once that is past cancelAfter, the grant is of no use and it
 * leaves. */
inline take_grant(c, fv) {
	fen[c] = fv;
#ifdef VALIDITY_FROM_RECEIPT
	/* the validity counts from the grant's receipt */
	valid[c] = CA;
	unqueue(c);
	held[c] = 1;
	become_live(c);
	cancel_before_expiry(c);
	st = HOLDING
#else
	if
	:: wage[c] < CA ->
		valid[c] = CA - wage[c];
		unqueue(c);
		held[c] = 1;
		become_live(c);
		cancel_before_expiry(c);
		st = HOLDING
	:: else ->
		fen[c] = 0;
		leave(c);
		st = IDLE
	fi
#endif
}
#endif

proctype Acquire(byte c) {
	byte st = IDLE;
end:
	do
	:: atomic { st == IDLE && att[c] < ATTS(c) && !paused[c] && CLEANED_UP(c) ->
		rlost[c] = 0; overran[c] = 0; lost[c] = 0;
		send_acquire(c, 1);
		st = WAITING }
	:: atomic { st == BACKOFF && !paused[c] -> send_acquire(c, 0); st = WAITING }
	:: atomic { st == WAITING && !paused[c] && arep[c] == R_ACQ ->
		if
		:: c == ACKC && FAILOVERS && rfaults > 0 ->
			/* WAIT: a replica has it (U holds it, and all before), or too
			 * few replicas acknowledged: unknown, and not definite */
			if
			:: copyStore(U, P); uumint = umint
			:: resolve_unknown(c); st = IDLE
			fi
		:: else -> skip
		fi;
		if
		:: st != IDLE -> forget_ghosts(c)
		:: else -> skip
		fi;
		if
		:: st == IDLE -> skip
#if TIMED && !defined(LATE_ACQUIRE_REPLY_USED)
		:: st != IDLE && age[c] >= CA ->
			/* a reply after the cancel point, or after the acquire's
			 * deadline, is unknown (issue 13, defect 5) */
			resolve_unknown(c);
			st = IDLE
#endif
		:: else ->
			if
			:: c == ACKC && arepf[c] > ackmax -> ackmax = arepf[c]
			:: else -> skip
			fi;
			fen[c] = arepf[c];
			/* validity counts from the attempt's send */
			if
			:: TIMED && age[c] < CA -> valid[c] = CA - age[c]
			:: else -> valid[c] = 0
			fi;
			held[c] = 1;
			become_live(c);
			clear_reply(c);
			st = HOLDING
		fi }
	:: atomic { st == WAITING && !paused[c] && (arep[c] == R_CONT || arep[c] == R_BARRED) ->
		result_matches_acquire(c);
#if QN
		dropped_holds_nothing(tok[c]);
#endif
		forget_ghosts(c);
		clear_reply(c);
		if
		:: att[c] < ATTS(c) -> st = BACKOFF /* WithWait: it sleeps and tries again */
		:: else -> st = IDLE
		fi }
#if QN
	:: atomic { st == WAITING && !paused[c] && arep[c] == R_QUEUED ->
		/* enqueued: the wait counts from the acquire's send */
		result_matches_acquire(c);
		forget_ghosts(c);
		wage[c] = age[c];
		queued[c] = 1;
		clear_reply(c);
		st = QUEUED }
	:: atomic { st == QUEUED && !paused[c] && !qreq[c] ->
		/* the refresh, every waiter TTL / 3 */
		slot[SR(c)].op = QRF; slot[SR(c)].cl = c; slot[SR(c)].tok = tok[c];
		qreq[c] = 1; qrep[c] = 0; qage[c] = 0 }
	:: atomic { st == QUEUED && !paused[c] && qreq[c] && qrep[c] == QW ->
		wage[c] = qage[c];
		qreq[c] = 0; qrep[c] = 0; qage[c] = 0 }
	:: atomic { st == QUEUED && !paused[c] && qreq[c] && qrep[c] == QG -> take_grant(c, qrepf[c]) }
	:: atomic { st == QUEUED && !paused[c] && qreq[c] && qrep[c] == QX ->
		/* gone: its entry expired, or a grant it never heard of ended */
		unqueue(c);
		if
		:: att[c] < ATTS(c) -> st = BACKOFF
		:: else -> st = IDLE
		fi }
	:: atomic { st == QUEUED && !paused[c] && qreq[c] ->
		/* no reply within the timeout: the next refresh will tell */
		drop(SR(c));
		qreq[c] = 0; qrep[c] = 0; qage[c] = 0 }
	:: atomic { st == QUEUED && !paused[c] && gtok[c] != 0 && gtok[c] == tok[c] -> take_grant(c, gfen[c]) }
	:: atomic { st == QUEUED && !paused[c] -> leave(c); st = IDLE }
#endif
	:: atomic { st == WAITING && !paused[c] ->
		/* no reply within the deadline (lost, late, an error): unknown */
		resolve_unknown(c);
		st = IDLE }
#if WRITES
	:: atomic { st == HOLDING && live[c] && !paused[c] && !wrote[c] ->
		/* Lease.Commit: the final write carries the fence */
		slot[SW(c)].op = WRT; slot[SW(c)].cl = c; slot[SW(c)].tok = tok[c];
		slot[SW(c)].fen = fen[c]; slot[SW(c)].ser = lmint[c];
		wrote[c] = 1 }
#endif
	:: atomic { st == HOLDING && !paused[c] ->
		/* Lease.end: the context is cancelled, then the release runs in
		 * the background (ReleaseAsync; Release waits for it) */
		drop(SR(c));
		held[c] = 0; live[c] = 0; wrote[c] = 0; valid[c] = 0; fen[c] = 0;
		rreq[c] = 0; rrep[c] = 0; rage[c] = 0; rser[c] = 0;
#if WRITES
		lmint[c] = 0;
#endif
		ltok[c] = tok[c];
		pending[c] = 1;
		st = IDLE }
	od
}

/* ==== proctype background: a Locker's releases and clean-ups
 * (lk.background: resolveUnknown in acquire.go, deleteKey in release.go) ==== */
proctype background(byte c) {
end:
	do
	:: atomic { pending[c] && lreq[c] == 0 && !paused[c] ->
#if QN
		slot[SL(c)].op = (lleave[c] -> LVE : REL);
		lleave[c] = 0;
#else
		slot[SL(c)].op = REL;
#endif
		slot[SL(c)].cl = c; slot[SL(c)].tok = ltok[c];
		lreq[c] = ltok[c]; lrep[c] = 0; reldel[c] = 0 }
	:: atomic { lreq[c] != 0 && lrep[c] != 0 && !paused[c] ->
		result_matches_release(c, lreq[c], lrep[c]);
		lreq[c] = 0; lrep[c] = 0; reldel[c] = 0; ltok[c] = 0; pending[c] = 0 }
	:: atomic { lreq[c] != 0 && !paused[c] ->
		/* no reply within the release timeout: the token is a ghost */
		drop(SL(c));
#if QN
		/* FIFO: only a next attempt reads the ghosts */
		noreply[lreq[c]] = 1;
		if
		:: att[c] < ATTS(c) -> add_ghost(c, lreq[c])
		:: else -> skip
		fi;
#else
		add_ghost(c, lreq[c]);
#endif
		lreq[c] = 0; lrep[c] = 0; reldel[c] = 0; ltok[c] = 0; pending[c] = 0 }
	od
}

/* ==== proctype scheduler: a Locker's renewals and cancel points
 * (lease/scheduler.go, renew.go) ==== */
proctype scheduler(byte c) {
end:
	do
	:: atomic { live[c] && !paused[c] && rreq[c] == 0 && rser[c] < RENEWALS ->
		rser[c]++;
		slot[SR(c)].op = REN; slot[SR(c)].cl = c; slot[SR(c)].tok = tok[c];
		slot[SR(c)].fen = fen[c]; slot[SR(c)].ser = rser[c];
		rreq[c] = rser[c]; rrep[c] = 0; rage[c] = 0 }
	:: atomic { rreq[c] != 0 && rrep[c] != 0 && !paused[c] ->
		/* renewed(): a reply for a lease no longer active changes nothing */
		if
		:: !live[c] ->
#ifdef LATE_RENEWAL_REPLY_APPLIED
			/* issue 13, defect 7: a renewal reply applied after the cancel
			 * point revived a lease Err had reported lost. */
			if
			:: held[c] && rrep[c] == RN_OK && rage[c] < CA ->
				valid[c] = CA - rage[c];
				become_live(c)
			:: else -> skip
			fi
#else
			skip
#endif
		:: live[c] && rrep[c] == RN_OK ->
			/* the cancel point moves to the renewal's send + cancelAfter */
			if
			:: TIMED && rage[c] < CA && CA - rage[c] > valid[c] -> valid[c] = CA - rage[c]
			:: else -> skip
			fi
		:: live[c] && rrep[c] != RN_OK ->
			/* rejected (force_released for RN_FORCED): lost */
			live[c] = 0; lost[c] = 1
		fi;
		rreq[c] = 0; rrep[c] = 0; rage[c] = 0 }
	:: atomic { rreq[c] != 0 && !paused[c] ->
		/* no reply within the renewal timeout: renewal_unknown */
		drop(SR(c));
		if
		:: live[c] -> live[c] = 0; lost[c] = 1
		:: else -> skip
		fi;
		rreq[c] = 0; rrep[c] = 0; rage[c] = 0 }
	od
}

/* ==== proctype clock: time (internal/clock) ====
 * TIMED: the servers' clock expires the lock TTL ticks after the script
 * that set or renewed it; a lease's cancel point is CA ticks after the
 * send of the acquire or renewal that set it, and the scheduler cancels
 * the context there. One tick stands for the drift allowance and the
 * safety margin: the cancel point comes before the expiry, on every
 * client's clock, unless the client is paused (it then misses it).
 * Untimed: a lock expires at any moment when no unpaused live lease and no
 * awaited acquire depends on it; that is all the cancel point guarantees. */
inline tick() {
	if
	:: P.lock != 0 ->
		P.ttl--;
		if
		:: P.ttl == 0 -> P.lock = 0; printf("@expire\n")
		:: else -> skip
		fi
	:: else -> skip
	fi;
	x = 0;
	do
	:: x < NC ->
		if
		:: live[x] && valid[x] > 0 -> valid[x]--
		:: else -> skip
		fi;
		if
		:: live[x] && valid[x] == 0 && !paused[x] -> live[x] = 0; lost[x] = 1
		:: live[x] && valid[x] == 0 && paused[x] -> overran[x] = 1
		:: else -> skip
		fi;
		if
		:: areq[x] != 0 && age[x] < CA -> age[x]++
		:: else -> skip
		fi;
		if
		:: rreq[x] != 0 && rage[x] < CA -> rage[x]++
		:: else -> skip
		fi;
#if QN
		if
		:: queued[x] && wage[x] < CA -> wage[x]++
		:: else -> skip
		fi;
		if
		:: qreq[x] && qage[x] < CA -> qage[x]++
		:: else -> skip
		fi;
		cancel_before_expiry(x);
#endif
		x++
	:: else -> break
	od;
	x = 0;
#if QN
	/* the entries' expiry, and the spec's record of it */
	y = 0;
	do
	:: y < qn ->
		if
		:: qx[y] == 1 -> qx[y] = 0; printf("@qexpire t=%d\n", qt[y])
		:: qx[y] > 1 -> qx[y]--
		:: else -> skip
		fi;
		y++
	:: else -> break
	od;
	y = 1;
	do
	:: y < NTOK ->
		if
		:: wl[y] > 0 -> wl[y]--
		:: else -> skip
		fi;
		y++
	:: else -> break
	od;
	y = 0;
#endif
	skip
}

#define NEEDED(o) ((live[o] || areq[o] != 0) && tok[o] == P.lock)
#if NC > 2
#define IN_USE (NEEDED(0) || NEEDED(1) || NEEDED(2))
#else
#define IN_USE (NEEDED(0) || NEEDED(1))
#endif
#define PAUSED_OWNER (P.lock != 0 && OWNER(P.lock) < NC && paused[OWNER(P.lock)] && tok[OWNER(P.lock)] == P.lock)

#define PAUSE(c) \
	:: atomic { pauses > 0 && held[c] && !paused[c] -> paused[c] = 1; pauses-- } \
	:: atomic { paused[c] -> paused[c] = 0; \
		if \
		:: live[c] && (overran[c] || TIMED && valid[c] == 0) -> live[c] = 0; lost[c] = 1 \
		:: else -> skip \
		fi }

proctype clock() {
end:
	do
#if TIMED
	:: d_step { tick() }
#else
	:: d_step { P.lock != 0 && (!IN_USE || PAUSED_OWNER) ->
		if
		:: PAUSED_OWNER -> overran[OWNER(P.lock)] = 1
		:: else -> skip
		fi;
		P.lock = 0;
		printf("@expire\n") }
#endif
#if PAUSES
	PAUSE(0)
	PAUSE(1)
#if NC > 2
	PAUSE(2)
#endif
#endif
	od
}

/* ==== proctype replication: Redis losing data ==== */

/* Every lease then held or being acquired may overlap another, and every
 * bar written so far may be gone. */
inline redis_lost() {
	x = 0;
	do
	:: x < NC -> rlost[x] = (held[x] || areq[x] != 0 || rlost[x]); x++
	:: else -> break
	od;
	x = 1;
	do
	:: x < NTOK -> excused[x] = (excused[x] || ended[x]); x++
	:: else -> break
	od;
	x = 0
}

/* SIM: the faults come every few acquisitions, not all at the start. */
#if SCENARIO == SIM
byte nextfault;
#define PACED (T >= nextfault)
#define PACE nextfault = T + 4
#else
#define PACED 1
#define PACE skip
#endif

proctype replication() {
end:
	do
	:: d_step { RESTARTS && rfaults > 0 && PACED ->
		PACE;
		/* a restart without persistence: the keys are gone, TIME is not */
		redis_lost();
		clearStore(P);
		clearStore(U);
		umint = 0; uumint = 0;
		ackmax = 0;
		rfaults--;
		printf("@restart\n") }
	:: d_step { EVICTIONS && rfaults > 0 && PACED && P.lock != 0 ->
		PACE;
		/* the fence record alone is lost (evicted, deleted from outside);
		 * the replica gets the delete like a script's effects */
		if
		:: FAILOVERS -> copyStore(U, P); uumint = umint
		:: else -> skip
		fi;
		x = 1;
		do
		:: x < NTOK -> excused[x] = (excused[x] || ended[x]); x++
		:: else -> break
		od;
		x = 0;
		P.fence = 0;
		umint = 0;
		j = 0;
		do
		:: j < BARS -> P.eT[j] = 0; P.eM[j] = 0; P.cT[j] = 0; j++
		:: else -> break
		od;
		j = 0;
		rfaults--;
		if
		:: rfaults == 0 -> clearStore(U); uumint = 0
		:: else -> skip
		fi;
		printf("@evict\n") }
	:: d_step { FAILOVERS && rfaults > 0 && PACED ->
		PACE;
		/* a failover to a replica that missed the last script */
		ack_fence_replicated();
		redis_lost();
		copyStore(P, U);
		umint = uumint;
		rfaults--;
		if
		:: rfaults == 0 -> clearStore(U); uumint = 0
		:: else -> skip
		fi;
		printf("@failover");
		print_state() }
	:: rfaults == 0 -> break
	od
}

/* ==== proctype ForceRelease: an administrator inspects the key and takes
 * it from the holder it saw (lease/admin.go, lockwatch release --force) ==== */
proctype ForceRelease() {
end:
	do
	:: d_step { forces > 0 && fwait == 0 && P.lock != 0 ->
		/* inspect.lua */
		printf("@inspect who=%d f=%d", P.lock, P.fence);
		print_state();
		forces--;
		fwait = P.lock;
		slot[SF].op = FRC; slot[SF].cl = NC; slot[SF].tok = P.lock;
		frep = 0; fdel = 0 }
	:: atomic { fwait != 0 && frep != 0 -> result_matches_force(fwait, frep); fwait = 0; frep = 0; fdel = 0 }
	:: atomic { fwait != 0 -> drop(SF); fwait = 0; frep = 0; fdel = 0 } /* unknown */
	od
}

/* ==== proctype operator: a mark that is ahead set back (lockwatch fence:
 * it reads the mark, RedisStore.Read, then the fence record's fence,
 * Locker.Inspect; RedisStore.Repair runs the repair script at the
 * resource with both) ====
 *
 * The script reads the resource's TIME and sets the mark to the target
 * max(minted, TIME + MaxSkew) if the mark is still the one read (seen)
 * and above that; otherwise it changes nothing and says why. Why that
 * keeps the writes in lease order: a lease minted before the script has a
 * fence at most the servers' TIME then, which the resource's TIME is at
 * most MaxSkew behind (the clock bound's assumption), so the target is at
 * or above every fence minted before it, with the fence record kept or
 * lost: no lease's write is above the target (the script never sets a
 * lease's mark back), and no write of a lease minted before the script
 * gets in after it. A lease minted more than MaxSkew after the script
 * mints above the target. minted, the comparison with seen and the order
 * of the reads add what keeps the repair safe beyond the model: fences
 * that run ahead of TIME (max(last + 1, TIME) after a failover to a
 * replica whose clock is behind: the model's fence is always its TIME),
 * and clocks that disagree by more than MaxSkew (README.md, "Mutants").
 * The operator may wait between its steps; it repairs once, and the
 * network may re-send the script (RCOPIES): the copy runs with the same
 * seen and minted at any later moment, reading TIME again. */
#if REPAIRS

/* The repair script's replies: nothing changes unless RP_SET. */
#define RP_SET 1     /* the mark is set to the target */
#define RP_CHANGED 2 /* the mark is not the one inspected */
#define RP_BEHIND 3  /* the mark inspected is not above max(minted, TIME + MaxSkew) */

/* The script compares the mark with seen, by value, as repair.lua does: a
 * copy that runs after the first may find seen again (a lease's write of
 * that fence), which a flag "set since the read" would not say. */
inline repair_lua() {
	x = wmark;
	/* the target: max(minted, TIME + MaxSkew) */
#ifdef REPAIR_TO_RECORD
	/* issue 26, the repair as first specified: back to the highest fence
	 * minted as the fence record says, which is behind after a failover
	 * and gone after a restart or an eviction */
	f = rminted;
#else
#ifdef REPAIR_WITHOUT_SKEW
	/* the repair as specified in eacab40: max(minted, TIME), which covers
	 * every fence minted before it only where the resource's clock is not
	 * behind the leases' Redis; the clock bound lets it be MaxSkew behind
	 * (found with this model: RLOSS with the record lost, and a re-sent
	 * script in REPAIR) */
	f = TR;
#else
	f = TR + SKEW;
#endif
	if
	:: rminted > f -> f = rminted
	:: else -> skip
	fi;
#endif
	if
	:: wmark != rseen -> rep = RP_CHANGED
	:: wmark == rseen && wmark > f -> rep = RP_SET
	:: wmark == rseen && wmark <= f -> rep = RP_BEHIND
	fi;
	if
	:: rep == RP_SET ->
		wmark = f;
		wid = 0;
#if STRANGER
		worig = FLOOR;
#endif
		repaired = 1;
		rtime = T;
		wpost = 0
	:: else -> skip
	fi;
	printf("@repair cp=%d seen=%d minted=%d now=%d r=%d m=%d after=%d\n", rstep == 3, rseen, rminted, TR, rep, x, wmark)
}

/* After the script: a copy of it stays in flight (rstep 3), or the
 * operator is done. */
inline repair_sent() {
	if
	:: rstep == 2 && rcopies > 0 -> rcopies--; rstep = 3
	:: else -> rstep = 0; rseen = 0; rminted = 0
	fi
}

proctype operator() {
end:
	do
	/* the mark first, then the record: every write the mark took before it
	 * was read has a fence the record read later holds or exceeds */
	:: d_step { repairs > 0 && rstep == 0 -> rseen = wmark; rstep = 1; printf("@repair-read seen=%d\n", rseen) }
	:: d_step { rstep == 1 -> rminted = P.fence; rstep = 2; printf("@repair-inspect minted=%d\n", rminted) }
	:: atomic { rstep == 2 || rstep == 3 ->
		store_clock();
		d_step {
			repair_lua();
			unload();
			if
			:: rstep == 2 -> repairs--
			:: else -> skip
			fi;
			repair_sent()
		} }
	od
}
#endif

init {
	atomic {
		byte c = 0;
		do
		:: c < NC -> run Acquire(c); run scheduler(c); run background(c); c++
		:: else -> break
		od;
		run redis();
		run network();
		run resource();
#if STRANGER
		/* the resource with the secret, or without */
		if
		:: SECRET != 0 -> secret = 1
		:: SECRET != 1 -> secret = 0
		fi;
		run stranger();
#endif
		run clock();
		if
		:: RFAULTS > 0 -> run replication()
		:: else -> skip
		fi;
		if
		:: FORCES > 0 -> run ForceRelease()
		:: else -> skip
#if REPAIRS
		fi;
		run operator()
#else
		fi
#endif
	}
}
