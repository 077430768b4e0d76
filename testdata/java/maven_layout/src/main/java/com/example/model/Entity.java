package com.example.model;

/** Base of every stored entity. */
public abstract class Entity {
    protected long id;

    public long getId() {
        return id;
    }

    protected void touch() {
        id++;
    }

    /** A one-line description. */
    public abstract String describe();
}
