package com.example.api;

import java.util.ArrayList;
import java.util.List;

class UserStore {
    private final List<String> users = new ArrayList<>();

    List<String> all() {
        return users;
    }

    String find(long id) {
        return users.get((int) id);
    }

    String add(String user) {
        users.add(user);
        return user;
    }

    void remove(long id) {
        users.remove((int) id);
    }
}
