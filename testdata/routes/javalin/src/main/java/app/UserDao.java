package app;

import java.util.ArrayList;
import java.util.List;

class UserDao {
    private static final List<String> USERS = new ArrayList<>();

    static List<String> all() {
        return USERS;
    }

    static void add(String user) {
        USERS.add(user);
    }

    static String find(String id) {
        return USERS.get(Integer.parseInt(id));
    }

    static void remove(String id) {
        USERS.remove(Integer.parseInt(id));
    }
}
