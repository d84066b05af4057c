// SPDX-License-Identifier: GPL-2.0
/*
 * Noise of a known kind on one CPU, for the reference test (tests/guest/README.md): a kernel
 * thread `noisy-MODE` that every period_ms makes busy_ms of
 *   preempt: a section with preemption off, spun by the thread itself on `cpu`;
 *   irq:     a section with interrupts off, spun by the thread itself on `cpu`;
 *   storm:   an interrupt storm on `cpu`: from another CPU the thread sends function-call
 *            IPIs to `cpu` back to back, each handler spinning irq_us (x86: the
 *            call_function_single vector), until busy_ms have passed;
 *   softirq: softirq work on `cpu`: each IPI schedules a tasklet there (TASKLET_SOFTIRQ) that
 *            spins irq_us; on PREEMPT_RT the tasklet runs in a softirq thread.
 * Built out of tree against Debian's linux-headers for the guest kernel (build.sh); stops when
 * unloaded.
 *
 *   insmod noisy.ko mode=storm cpu=1 busy_ms=10 period_ms=100 irq_us=50
 */
#include <linux/cpumask.h>
#include <linux/delay.h>
#include <linux/ktime.h>
#include <linux/timekeeping.h>
#include <linux/err.h>
#include <linux/interrupt.h>
#include <linux/irqflags.h>
#include <linux/jiffies.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/preempt.h>
#include <linux/sched.h>
#include <linux/smp.h>
#include <linux/string.h>

static char *mode = "preempt";
module_param(mode, charp, 0444);
MODULE_PARM_DESC(mode, "preempt, irq, storm or softirq");
static int cpu = 1;
module_param(cpu, int, 0444);
static int busy_ms = 10;
module_param(busy_ms, int, 0444);
static int period_ms = 100;
module_param(period_ms, int, 0444);
static int irq_us = 500;
module_param(irq_us, int, 0444);
MODULE_PARM_DESC(irq_us, "storm/softirq: the time each handler or tasklet spins");

enum noisy_mode { PREEMPT, IRQ, STORM, SOFTIRQ };
static enum noisy_mode kind;
static struct task_struct *task;
static struct tasklet_struct tasklet;

/*
 * Spins for us microseconds of the clock the traces use (ktime: CLOCK_MONOTONIC). Not
 * udelay/mdelay: on the emulated CPUs of the TCG guests their TSC-calibrated loops ended
 * after ~4 us instead of 2 ms, and mdelay(10) mostly after 90 us (seen in the reference trace).
 */
static void spin_us(int us)
{
	u64 end = ktime_get_ns() + (u64)us * NSEC_PER_USEC;

	while (ktime_get_ns() < end)
		cpu_relax();
}

/*
 * The functions below are noinline and named noisy_*: `--explain`'s kernel stacks must name
 * them (noisy_checks.py: the stacks' first frames name this module's functions).
 */
static noinline void noisy_long_softirq(struct tasklet_struct *t)
{
	spin_us(irq_us);
}

/* Runs on `cpu` in the function-call IPI. */
static noinline void noisy_long_irq_handler(void *unused)
{
	if (kind == STORM)
		spin_us(irq_us);
	else
		tasklet_schedule(&tasklet);
}

static noinline void noisy_hold_preempt_off(void)
{
	preempt_disable();
	spin_us(busy_ms * USEC_PER_MSEC);
	preempt_enable();
}

static noinline void noisy_hold_irqs_off(void)
{
	unsigned long flags;

	local_irq_save(flags);
	spin_us(busy_ms * USEC_PER_MSEC);
	local_irq_restore(flags);
}

/* busy_ms of IPIs to `cpu`, each sent when the last one's handler has returned. */
static void send_ipis(void)
{
	unsigned long end = jiffies + msecs_to_jiffies(busy_ms);

	while (time_before(jiffies, end) && !kthread_should_stop()) {
		smp_call_function_single(cpu, noisy_long_irq_handler, NULL, 1);
		if (kind == SOFTIRQ)
			spin_us(irq_us); /* about the tasklet's time: one pending at a time */
	}
}

static noinline int noisy_thread(void *unused)
{
	while (!kthread_should_stop()) {
		switch (kind) {
		case PREEMPT:
			noisy_hold_preempt_off();
			break;
		case IRQ:
			noisy_hold_irqs_off();
			break;
		default:
			send_ipis();
		}
		msleep_interruptible(period_ms - busy_ms);
	}
	return 0;
}

static int __init noisy_init(void)
{
	unsigned int home = cpu;

	if (!strcmp(mode, "preempt"))
		kind = PREEMPT;
	else if (!strcmp(mode, "irq"))
		kind = IRQ;
	else if (!strcmp(mode, "storm"))
		kind = STORM;
	else if (!strcmp(mode, "softirq"))
		kind = SOFTIRQ;
	else
		return -EINVAL;
	if (busy_ms < 1 || period_ms <= busy_ms || cpu < 0 || cpu >= nr_cpu_ids ||
	    !cpu_online(cpu) || irq_us < 1 || irq_us > 100000)
		return -EINVAL;
	if (kind == STORM || kind == SOFTIRQ) {
		/* The sender runs on another CPU: the measured one sees only the interrupts. */
		home = cpumask_any_but(cpu_online_mask, cpu);
		if (home >= nr_cpu_ids)
			return -EINVAL;
	}
	tasklet_setup(&tasklet, noisy_long_softirq);
	task = kthread_create(noisy_thread, NULL, "noisy-%s", mode);
	if (IS_ERR(task))
		return PTR_ERR(task);
	kthread_bind(task, home);
	wake_up_process(task);
	return 0;
}

static void __exit noisy_exit(void)
{
	kthread_stop(task);
	tasklet_kill(&tasklet);
}

module_init(noisy_init);
module_exit(noisy_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("rtscope guest test: preemption-off, interrupts-off, interrupt-storm or softirq noise on one CPU");
