//! Connection slots of an event loop: a vector of optional entries and a
//! list of free indexes, so that a connection's index (carried in its
//! completions and epoll events) stays valid while it lives and is reused
//! once it is gone.

/// Puts `value` in a free slot (or a new one) and returns its index.
pub fn insert<T>(slots: &mut Vec<Option<T>>, free: &mut Vec<u32>, value: T) -> u32 {
    match free.pop() {
        Some(slot) => {
            debug_assert!(slots[slot as usize].is_none(), "slot {slot} is free and taken");
            slots[slot as usize] = Some(value);
            slot
        }
        None => {
            slots.push(Some(value));
            (slots.len() - 1) as u32
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn reuses_freed_slots() {
        let (mut slots, mut free) = (Vec::new(), Vec::new());
        assert_eq!(super::insert(&mut slots, &mut free, 'a'), 0);
        assert_eq!(super::insert(&mut slots, &mut free, 'b'), 1);
        slots[0] = None;
        free.push(0);
        assert_eq!(super::insert(&mut slots, &mut free, 'c'), 0);
        assert_eq!(slots, vec![Some('c'), Some('b')]);
    }
}
