/* The interpreter-free floor for a refusal over stdio (issue 22 item 5): floor_refusal.py's
 * loop in C. A blocking read(2) of stdin, each whole line answered with one write(2): a
 * request (a line with an integer "id") gets the runtime's -32010 in-flight refusal with that
 * id, "initialize" a fixed result, a notification nothing. No JSON parser: the id is found
 * by its key, which is all the benchmark's probes need.
 *
 *     cc -O2 -o floor_refusal floor_refusal.c && ./floor_refusal
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char REFUSAL[] =
    "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"error\":{\"code\":-32010,\"message\":\"Server "
    "overloaded: too many requests in flight on this connection\",\"data\":{\"maxInFlight\":1}}}\n";
static const char INITIALIZED[] =
    "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"result\":{\"protocolVersion\":\"2025-11-25\","
    "\"capabilities\":{},\"serverInfo\":{\"name\":\"floor-refusal-c\",\"version\":\"1\"}}}\n";

static size_t answer(const char *line, char *out, size_t room) {
    const char *id = strstr(line, "\"id\":");
    if (id == NULL) return 0; /* a notification */
    long value = strtol(id + 5, NULL, 10);
    const char *reply = strstr(line, "\"method\":\"initialize\"") ? INITIALIZED : REFUSAL;
    int n = snprintf(out, room, reply, value);
    return n > 0 && (size_t)n < room ? (size_t)n : 0;
}

int main(void) {
    static char in[1 << 16], out[1 << 16];
    size_t have = 0;
    for (;;) {
        ssize_t got = read(0, in + have, sizeof in - 1 - have);
        if (got <= 0) return 0;
        have += (size_t)got;
        in[have] = '\0';
        size_t used = 0, wrote = 0;
        char *end;
        while ((end = memchr(in + used, '\n', have - used)) != NULL) {
            *end = '\0';
            wrote += answer(in + used, out + wrote, sizeof out - wrote);
            used = (size_t)(end - in) + 1;
        }
        memmove(in, in + used, have - used);
        have -= used;
        if (have == sizeof in - 1) return 1; /* a line longer than the buffer */
        for (size_t sent = 0; sent < wrote;) {
            ssize_t n = write(1, out + sent, wrote - sent);
            if (n <= 0) return 1;
            sent += (size_t)n;
        }
    }
}
