package com.example.model;

import java.util.Objects;

/** A registered user. */
public class User extends Entity implements Comparable<User> {
    private final String name;

    public User(String name) {
        super();
        this.name = Objects.requireNonNull(name);
    }

    public String getName() {
        return name;
    }

    @Override
    public String describe() {
        touch();
        return "User " + getName() + " #" + getId();
    }

    @Override
    public int compareTo(User other) {
        return name.compareTo(other.name);
    }
}
