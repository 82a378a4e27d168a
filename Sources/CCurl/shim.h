// The system libcurl (Debian: libcurl4-openssl-dev), for webhook deliveries: only HTTPClient uses it.
// curl_easy_setopt, curl_easy_getinfo and curl_multi_setopt are variadic macros Swift cannot call:
// each wrapper below fixes one argument type.
#ifndef CCURL_SHIM_H
#define CCURL_SHIM_H

#include <curl/curl.h>
#include <netdb.h>
#include <sys/socket.h>

static inline CURLcode ccurl_easy_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ccurl_easy_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ccurl_easy_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}

typedef size_t (*ccurl_write_callback)(char *data, size_t size, size_t count, void *context);
static inline CURLcode ccurl_easy_setopt_write(CURL *handle, ccurl_write_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, callback);
}

typedef curl_socket_t (*ccurl_opensocket_callback)(void *context, curlsocktype purpose, struct curl_sockaddr *address);
static inline CURLcode ccurl_easy_setopt_opensocket(CURL *handle, ccurl_opensocket_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_OPENSOCKETFUNCTION, callback);
}

static inline long ccurl_easy_response_code(CURL *handle) {
    long code = 0;
    curl_easy_getinfo(handle, CURLINFO_RESPONSE_CODE, &code);
    return code;
}

static inline void *ccurl_easy_private(CURL *handle) {
    char *pointer = NULL;
    curl_easy_getinfo(handle, CURLINFO_PRIVATE, &pointer);
    return pointer;
}

/// The numeric host and port of a socket address curl is about to connect to (0 on success).
static inline int ccurl_address_text(const struct curl_sockaddr *address, char *host, size_t hostLength, char *port,
                                     size_t portLength) {
    return getnameinfo(&address->addr, address->addrlen, host, hostLength, port, portLength,
                       NI_NUMERICHOST | NI_NUMERICSERV);
}

/// A finished transfer's handle and result, or NULL when none is left.
static inline CURL *ccurl_multi_done(CURLM *multi, CURLcode *result) {
    int left = 0;
    CURLMsg *message;
    while ((message = curl_multi_info_read(multi, &left)) != NULL) {
        if (message->msg == CURLMSG_DONE) {
            *result = message->data.result;
            return message->easy_handle;
        }
    }
    return NULL;
}

#endif
