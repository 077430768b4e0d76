//! The worker pool both harnesses run their tasks on.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Runs `work` on every item of `items`, `workers` at a time, and hands
/// each result to `done`, one result at a time, in the order the items
/// finish.
///
/// - Each item is worked on at most once. A worker takes the next item
///   only when it is free, so `items` are started in order.
/// - The worker that did an item runs `done` on its result (under a lock,
///   so `done` may keep plain mutable state: a tally, a file to append to)
///   before it takes another item. What has to happen before an item's
///   work (an event saying it started) belongs at the start of `work`.
/// - `stop` is checked before each item is started: once it is set, no
///   new item starts; the items in flight finish and still go to `done`.
/// - When `done` fails, likewise no new item starts (the items in flight
///   still go to `done`), and the first error is returned once every
///   worker has stopped. The pool never sets `stop` itself.
/// - `workers` is at least 1 and at most `items.len()`: 0 runs one worker,
///   more workers than items run one per item.
///
/// A panic in `work` ends that worker (the others go on); a panic in `done`
/// stops every worker after its current item (whose result is dropped).
/// Either is propagated once all workers have stopped.
pub(crate) fn for_each_parallel<T, R, E>(
    items: &[T],
    workers: usize,
    stop: &AtomicBool,
    work: impl Fn(&T) -> R + Sync,
    done: impl FnMut(&T, R) -> Result<(), E> + Send,
) -> Result<(), E>
where
    T: Sync,
    E: Send,
{
    let workers = workers.clamp(1, items.len().max(1));
    let next = AtomicUsize::new(0);
    // Set when `done` fails: stop handing out items.
    let halted = AtomicBool::new(false);
    let recording = Mutex::new((done, None::<E>));
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                while !stop.load(Ordering::SeqCst)
                    && !halted.load(Ordering::SeqCst)
                    && !recording.is_poisoned()
                {
                    let Some(item) = items.get(next.fetch_add(1, Ordering::SeqCst)) else {
                        break;
                    };
                    let result = work(item);
                    // Poisoned: `done` panicked on another worker.
                    let Ok(mut recording) = recording.lock() else {
                        break;
                    };
                    let (done, first_error) = &mut *recording;
                    if let Err(e) = done(item, result) {
                        halted.store(true, Ordering::SeqCst);
                        first_error.get_or_insert(e);
                    }
                }
            });
        }
    });
    // A panic in `done` has been propagated by the scope: not poisoned.
    let (_, first_error) = recording.into_inner().unwrap_or_else(|p| p.into_inner());
    first_error.map_or(Ok(()), Err)
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    /// Waits (at most 10 s) until `condition` holds.
    fn wait_for(condition: impl Fn() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !condition() {
            assert!(Instant::now() < deadline, "timed out");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn every_item_is_worked_on_once_and_delivered_once() {
        let items: Vec<usize> = (0..100).collect();
        let worked = Mutex::new(Vec::new());
        let mut delivered = Vec::new();
        let outcome: Result<(), ()> = for_each_parallel(
            &items,
            4,
            &AtomicBool::new(false),
            |&i| {
                worked.lock().unwrap().push(i);
                i * 2
            },
            |&i, doubled| {
                assert_eq!(doubled, i * 2);
                delivered.push(i);
                Ok(())
            },
        );
        assert_eq!(outcome, Ok(()));
        let mut worked = worked.into_inner().unwrap();
        worked.sort_unstable();
        delivered.sort_unstable();
        assert_eq!(worked, items);
        assert_eq!(delivered, items);
    }

    #[test]
    fn a_worker_records_its_result_before_it_takes_the_next_item() {
        let log = Mutex::new(Vec::new());
        let outcome: Result<(), ()> = for_each_parallel(
            &[0, 1, 2],
            1,
            &AtomicBool::new(false),
            |&i| log.lock().unwrap().push(format!("work {i}")),
            |&i, ()| {
                log.lock().unwrap().push(format!("done {i}"));
                Ok(())
            },
        );
        assert_eq!(outcome, Ok(()));
        assert_eq!(
            log.into_inner().unwrap(),
            ["work 0", "done 0", "work 1", "done 1", "work 2", "done 2"]
        );
    }

    #[test]
    fn workers_run_at_once() {
        // Item 0 finishes only once item 1 has started: that needs two
        // workers at a time.
        let started = AtomicBool::new(false);
        let outcome: Result<(), ()> = for_each_parallel(
            &[0, 1],
            2,
            &AtomicBool::new(false),
            |&i| {
                if i == 1 {
                    started.store(true, Ordering::SeqCst);
                } else {
                    wait_for(|| started.load(Ordering::SeqCst));
                }
            },
            |_, ()| Ok(()),
        );
        assert_eq!(outcome, Ok(()));
    }

    #[test]
    fn results_come_in_completion_order() {
        // Item 0 waits until item 1's result is delivered: 1 comes first,
        // and both come.
        let one_delivered = AtomicBool::new(false);
        let mut order = Vec::new();
        let outcome: Result<(), ()> = for_each_parallel(
            &[0, 1],
            2,
            &AtomicBool::new(false),
            |&i| {
                if i == 0 {
                    wait_for(|| one_delivered.load(Ordering::SeqCst));
                }
                i
            },
            |&i, r| {
                assert_eq!(i, r);
                if i == 1 {
                    one_delivered.store(true, Ordering::SeqCst);
                }
                order.push(i);
                Ok(())
            },
        );
        assert_eq!(outcome, Ok(()));
        assert_eq!(order, [1, 0]);
    }

    #[test]
    fn the_stop_flag_stops_new_items() {
        let items: Vec<usize> = (0..10).collect();
        let stop = AtomicBool::new(false);
        let mut delivered = Vec::new();
        // One worker: items run in order, and the one that sets the flag is
        // the last delivered.
        let outcome: Result<(), ()> = for_each_parallel(
            &items,
            1,
            &stop,
            |&i| {
                if i == 3 {
                    stop.store(true, Ordering::SeqCst);
                }
            },
            |&i, ()| {
                delivered.push(i);
                Ok(())
            },
        );
        assert_eq!(outcome, Ok(()));
        assert_eq!(delivered, [0, 1, 2, 3]);

        // Several workers: the items in flight finish and are delivered,
        // nothing starts after.
        let stop = AtomicBool::new(false);
        let started = AtomicUsize::new(0);
        let mut count = 0;
        let outcome: Result<(), ()> = for_each_parallel(
            &items,
            3,
            &stop,
            |_| {
                if started.fetch_add(1, Ordering::SeqCst) == 0 {
                    stop.store(true, Ordering::SeqCst);
                }
            },
            |_, ()| {
                count += 1;
                Ok(())
            },
        );
        assert_eq!(outcome, Ok(()));
        assert_eq!(count, started.load(Ordering::SeqCst));
        assert!(count <= 3, "{count} items ran after the stop");

        // Set beforehand: nothing runs.
        let outcome: Result<(), ()> = for_each_parallel(
            &items,
            2,
            &AtomicBool::new(true),
            |_| panic!("no item should run"),
            |_, ()| Ok(()),
        );
        assert_eq!(outcome, Ok(()));
    }

    #[test]
    fn a_failing_done_stops_the_pool_and_its_first_error_is_returned() {
        let items: Vec<usize> = (0..10).collect();
        let mut delivered = Vec::new();
        let outcome = for_each_parallel(
            &items,
            1,
            &AtomicBool::new(false),
            |&i| i,
            |_, i| {
                delivered.push(i);
                if i == 2 {
                    Err(format!("cannot record {i}"))
                } else {
                    Ok(())
                }
            },
        );
        assert_eq!(outcome, Err("cannot record 2".to_owned()));
        assert_eq!(delivered, [0, 1, 2]);

        // Several workers: the items in flight are still delivered, and
        // only the first error is kept; the caller's flag is left alone.
        let stop = AtomicBool::new(false);
        let worked = AtomicUsize::new(0);
        let mut delivered = 0;
        let outcome = for_each_parallel(
            &items,
            3,
            &stop,
            |&i| {
                worked.fetch_add(1, Ordering::SeqCst);
                i
            },
            |_, i| {
                delivered += 1;
                Err(i)
            },
        );
        assert!(matches!(outcome, Err(i) if i < 3), "{outcome:?}");
        assert_eq!(delivered, worked.load(Ordering::SeqCst));
        assert!(delivered <= 3, "{delivered} items ran after the failure");
        assert!(!stop.load(Ordering::SeqCst));
    }

    #[test]
    fn zero_workers_run_one_and_extra_workers_are_not_needed() {
        let items = ["a", "b", "c"];
        for workers in [0, 1, 3, 8] {
            let mut delivered = Vec::new();
            let outcome: Result<(), ()> = for_each_parallel(
                &items,
                workers,
                &AtomicBool::new(false),
                |s| s.to_uppercase(),
                |_, s| {
                    delivered.push(s);
                    Ok(())
                },
            );
            assert_eq!(outcome, Ok(()));
            delivered.sort();
            assert_eq!(delivered, ["A", "B", "C"], "{workers} workers");
        }
        let outcome: Result<(), ()> = for_each_parallel(
            &[] as &[u8],
            4,
            &AtomicBool::new(false),
            |_| panic!("no item"),
            |_, ()| panic!("no result"),
        );
        assert_eq!(outcome, Ok(()));
    }

    #[test]
    fn a_panicking_done_stops_the_workers_and_propagates() {
        let items: Vec<usize> = (0..1000).collect();
        let worked = AtomicUsize::new(0);
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _: Result<(), ()> = for_each_parallel(
                &items,
                2,
                &AtomicBool::new(false),
                |_| {
                    worked.fetch_add(1, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(1));
                },
                |_, ()| panic!("done failed"),
            );
        }));
        assert!(panicked.is_err());
        assert!(worked.load(Ordering::SeqCst) < items.len());
    }
}
