//! The usage text of `rtscope cyclictest`.

/// Printed by `--help` (cyclictest's option letters, rtscope's behaviour).
pub const USAGE: &str = "\
rtscope cyclictest: timer wake-up latency, drop-in compatible with cyclictest 2.x
Usage:
rtscope cyclictest <options>      (or run rtscope through a symlink named cyclictest)

-a [CPUSET] --affinity     pin thread #N to CPU #N, or round-robin over CPUSET
                           (e.g. 0-3,5 or !1)
-A USEC  --aligned=USEC    align thread wakeups, thread N offset by N*USEC
-b USEC  --breaktrace=USEC stop the run when a latency exceeds USEC (exit code 0)
-c CLOCK --clock=CLOCK     0 = CLOCK_MONOTONIC (default), 1 = CLOCK_REALTIME
         --default-system  leave /dev/cpu_dma_latency alone (by default it is held
                           at 0 for the run, as cyclictest holds it)
-d DIST  --distance=DIST   distance of thread intervals in us, default=500
-D TIME  --duration=TIME   run length: 30 (seconds), 10m, 2h, 1d
-h US    --histogram=US    print a latency histogram of US buckets after the run
-H US    --histofall=US    same as -h with an additional summary column
         --histfile=PATH   write the histogram to PATH instead of stdout
         --hist-sparse     omit empty buckets and the # Total: line (rt-tests 2.7+ form)
-i INTV  --interval=INTV   base interval of thread in us, default=1000,
                           at most 3600000000 (1 hour), also with -d
         --json=FILE       write final results into FILE, JSON formatted
         --laptop          leave /dev/cpu_dma_latency alone (to save battery)
         --latency=PM_QOS  hold PM_QOS (us) in /dev/cpu_dma_latency for the run
                           (default 0; released at exit)
-l LOOPS --loops=LOOPS     number of loops per thread: default=0 (endless)
         --mainaffinity=CPUSET  run the main (non-RT) thread on CPUSET
-m       --mlockall        lock current and future memory allocations
-M       --refresh_on_max  redraw the status only when a new max is seen
-n                         obsolete, accepted with a notice
-N       --nsecs           print results in ns instead of us
-o RED   --oscope=RED      with -v, print the max of every RED samples
-p PRIO  --priority=PRIO   priority of the measuring threads (SCHED_FIFO)
         --policy=NAME     other, normal, batch, idle, fifo or rr
         --priospread      decrease the priority by one per thread
-q       --quiet           print a summary only on exit
-r       --relative        use relative sleeps instead of absolute deadlines
         --secaligned [USEC] align wakeups to the next full second (+ USEC)
-S       --smp             one thread per CPU, pinned, same priority
         --smi             count SMIs per thread (x86, Intel; needs -a, not -v)
         --spike=US        record every latency above US
         --spike-nodes=N   keep at most N spikes (default 1024; all are counted)
-t [NUM] --threads[=NUM]   NUM threads, or one per CPU without NUM (default 1)
         --tracemark       write an ftrace marker when -b fires
-u       --unbuffered      flush output at every update
-v       --verbose         print every sample: thread:cycle:value
         --db=PATH         record the run in this rtscope database (with --label, --tag K=V)
         --raw             with --db: keep every sample in the database
         --help            this text

Signals: SIGINT/SIGTERM end the run at once; SIGUSR1 prints the status on
stderr, SIGUSR2 writes it to /dev/shm/cyclictest<PID> (get_cyclictest_snapshot).
Exit codes: 0 done (also when stopped by SIGINT/SIGTERM, as cyclictest),
1 -b threshold exceeded, 2 usage or setup error.
Not supported (exit 2): -F/--fifo, -R, -s, -x.
";
