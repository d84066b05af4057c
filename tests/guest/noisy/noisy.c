// SPDX-License-Identifier: GPL-2.0
/*
 * A kernel thread `noisy-MODE` bound to one CPU that, every period_ms, spins busy_ms with
 * preemption off (mode=preempt) or with interrupts off (mode=irq): the non-preemptible and
 * interrupts-off sections of the reference test (tests/guest/README.md). Built out of tree
 * against Debian's linux-headers for the guest kernel (build.sh); stops when unloaded.
 *
 *   insmod noisy.ko mode=preempt cpu=1 busy_ms=10 period_ms=100
 */
#include <linux/delay.h>
#include <linux/err.h>
#include <linux/irqflags.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/preempt.h>
#include <linux/sched.h>
#include <linux/string.h>

static char *mode = "preempt";
module_param(mode, charp, 0444);
MODULE_PARM_DESC(mode, "preempt: preemption off; irq: interrupts off");
static int cpu = 1;
module_param(cpu, int, 0444);
static int busy_ms = 10;
module_param(busy_ms, int, 0444);
static int period_ms = 100;
module_param(period_ms, int, 0444);

static struct task_struct *task;
static bool irqs_off;

static int noisy_fn(void *unused)
{
	while (!kthread_should_stop()) {
		unsigned long flags = 0;

		if (irqs_off)
			local_irq_save(flags);
		else
			preempt_disable();
		mdelay(busy_ms);
		if (irqs_off)
			local_irq_restore(flags);
		else
			preempt_enable();
		msleep_interruptible(period_ms - busy_ms);
	}
	return 0;
}

static int __init noisy_init(void)
{
	if (strcmp(mode, "preempt") && strcmp(mode, "irq"))
		return -EINVAL;
	if (busy_ms < 1 || period_ms <= busy_ms || cpu < 0 || cpu >= nr_cpu_ids ||
	    !cpu_online(cpu))
		return -EINVAL;
	irqs_off = !strcmp(mode, "irq");
	task = kthread_create(noisy_fn, NULL, "noisy-%s", mode);
	if (IS_ERR(task))
		return PTR_ERR(task);
	kthread_bind(task, cpu);
	wake_up_process(task);
	return 0;
}

static void __exit noisy_exit(void)
{
	kthread_stop(task);
}

module_init(noisy_init);
module_exit(noisy_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("rtscope guest test: preemption-off or interrupts-off sections on one CPU");
