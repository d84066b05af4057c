//! [`super::Recorder::since`]'s reader on the real map, written by the real programs run on
//! synthetic contexts (`BPF_PROG_TEST_RUN`, [`super::run`]): every record taken once, in
//! order, across batches; those overwritten before or while they were read counted lost;
//! one still being written at the head read next time.

use super::record::{RecordKind, RECORD};
use super::run::{ctx, Rig};
use super::HEADER;
use crate::late::run::rig;
use rtscope_testkit::require_ok;

/// The IRQ numbers of `records` (all `irq_handler_entry`).
fn irqs(records: &[super::Record]) -> Vec<i32> {
    records
        .iter()
        .map(|r| match r.kind {
            RecordKind::IrqEntry { irq } => irq,
            other => panic!("{other:?}"),
        })
        .collect()
}

fn write(r: &Rig, irqs: std::ops::Range<u64>) {
    for irq in irqs {
        r.run("irq_handler_entry", &ctx(&[irq]));
    }
}

#[test]
fn a_reader_following_the_ring_takes_each_record_once_and_counts_those_it_missed() {
    require_ok!(rig::available());
    let r = Rig::new(8);
    let empty = r.ring.since(r.cpu, 0, &mut || {});
    assert_eq!((empty.records.len(), empty.next, empty.lost), (0, 0, 0));
    write(&r, 0..5);
    let a = r.ring.since(r.cpu, 0, &mut || {});
    assert_eq!(
        (irqs(&a.records), a.next, a.lost),
        (vec![0, 1, 2, 3, 4], 5, 0)
    );
    // Nothing new: nothing again.
    let same = r.ring.since(r.cpu, a.next, &mut || {});
    assert_eq!((same.records.len(), same.next, same.lost), (0, 5, 0));
    write(&r, 5..8);
    let b = r.ring.since(r.cpu, a.next, &mut || {});
    assert_eq!((irqs(&b.records), b.next, b.lost), (vec![5, 6, 7], 8, 0));
    assert!(b.records.iter().zip(5..).all(|(x, i)| x.index == i));
    // Twelve more into a ring of eight: the four oldest were overwritten before the read.
    write(&r, 8..20);
    let c = r.ring.since(r.cpu, b.next, &mut || {});
    assert_eq!(
        (irqs(&c.records), c.next, c.lost, c.lost_upto),
        ((12..20).collect::<Vec<_>>(), 20, 4, 12)
    );
    // Three written while the reader copies: the three oldest copies are stale, counted lost;
    // the three new ones come with the next batch.
    write(&r, 20..28);
    let d = r.ring.since(r.cpu, c.next, &mut || write(&r, 28..31));
    assert_eq!(
        (irqs(&d.records), d.next, d.lost, d.lost_upto),
        ((23..28).collect::<Vec<_>>(), 28, 3, 23)
    );
    let e = r.ring.since(r.cpu, d.next, &mut || {});
    assert_eq!(
        (irqs(&e.records), e.next, e.lost),
        (vec![28, 29, 30], 31, 0)
    );
}

#[test]
fn a_record_still_being_written_ends_the_batch_and_is_read_next_time() {
    require_ok!(rig::available());
    let r = Rig::new(16);
    write(&r, 0..6);
    // Index 3's sequence number not yet its own: a program still writing it.
    let key = r.cpu.to_le_bytes();
    let mut value = vec![0u8; super::ring::Ring::value_size(16)];
    assert!(rig::lookup(r.ring.map(), &key, &mut value));
    let seq = HEADER + 3 * RECORD + 8;
    let mine = value[seq..seq + 4].to_vec();
    value[seq..seq + 4].copy_from_slice(&0u32.to_le_bytes());
    rig::update(r.ring.map(), &key, &value).expect("the map's update");
    let a = r.ring.since(r.cpu, 0, &mut || {});
    assert_eq!((irqs(&a.records), a.next, a.lost), (vec![0, 1, 2], 3, 0));
    // Published since: read from there, once.
    value[seq..seq + 4].copy_from_slice(&mine);
    rig::update(r.ring.map(), &key, &value).expect("the map's update");
    let b = r.ring.since(r.cpu, a.next, &mut || {});
    assert_eq!((irqs(&b.records), b.next, b.lost), (vec![3, 4, 5], 6, 0));
}

#[test]
fn a_record_never_published_far_behind_the_head_is_counted_lost() {
    require_ok!(rig::available());
    let n = super::ring::NESTED as usize + 4;
    let r = Rig::new(64);
    write(&r, 0..n as u64 + 2);
    let key = r.cpu.to_le_bytes();
    let mut value = vec![0u8; super::ring::Ring::value_size(64)];
    assert!(rig::lookup(r.ring.map(), &key, &mut value));
    let seq = HEADER + RECORD + 8;
    value[seq..seq + 4].copy_from_slice(&0u32.to_le_bytes());
    rig::update(r.ring.map(), &key, &value).expect("the map's update");
    let a = r.ring.since(r.cpu, 0, &mut || {});
    assert_eq!((a.records.len(), a.next, a.lost), (n + 1, n as u64 + 2, 1));
    assert!(!irqs(&a.records).contains(&1));
}
