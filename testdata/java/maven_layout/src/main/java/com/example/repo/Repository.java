package com.example.repo;

import java.util.List;
import java.util.Optional;

/** Stores entities of one type. */
public interface Repository<T extends com.example.model.Entity> {
    void save(T item);

    List<T> findAll();

    /** The first stored item, if any. */
    default Optional<T> first() {
        List<T> all = findAll();
        return all.isEmpty() ? Optional.empty() : Optional.of(all.get(0));
    }

    default String describeAll() {
        StringBuilder out = new StringBuilder();
        for (T item : findAll()) {
            out.append(item.describe());
        }
        return out.toString();
    }
}
