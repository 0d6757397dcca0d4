;;; eglot.el --- Emacs's eglot asks openvaala, as a user does  -*- lexical-binding: t -*-

;; `emacs --batch -q -l eglot.el` in the project, with README's eglot snippet as the user's config
;; (the file OPENVAALA_TEST_CONFIG; no package of ours): M-x eglot on app.py, an unsaved edit, M-x eglot-code-actions on the selected line (the user
;; picks "Ask openvaala" where eglot asks, through `completing-read-function', as any completion UI
;; answers it) and M-x openvaala-ask with a prompt of the user's own. What Emacs showed (its
;; *Messages*) and what eglot exchanged (its events buffer) go to the JSON file
;; OPENVAALA_TEST_RESULT for tests/e2e/test_eglot.py.

(load (getenv "OPENVAALA_TEST_CONFIG") nil t)  ; the user's config
(require 'eglot)
(require 'json)
(require 'lisp-mnt)

(defvar openvaala-test-menus nil "The choices eglot offered, each a list of titles.")
(defvar openvaala-test-server nil "Eglot's connection to openvaala-lsp.")

(defun openvaala-test-wait (what condition)
  "Run the event loop until CONDITION returns non-nil; a minute at most (a hang guard)."
  (let ((deadline (+ (float-time) 60)))
    (while (not (funcall condition))
      (when (> (float-time) deadline)
        (error "Timed out waiting for %s" what))
      (accept-process-output nil 0.05))))

(defun openvaala-test-shown ()
  "The lines of *Messages* that show openvaala's messages."
  (with-current-buffer (messages-buffer)
    (seq-filter (lambda (line) (string-match-p "openvaala: " line))
                (split-string (buffer-string) "\n" t))))

(defun openvaala-test-answered (before)
  "Wait until a message says openvaala's answer (one that ends a turn), after BEFORE of them."
  (let ((answers (lambda () (seq-filter (lambda (line) (string-match-p "(type=3): openvaala: " line))
                                        (openvaala-test-shown)))))
    (openvaala-test-wait "the answer's message" (lambda () (> (length (funcall answers)) before)))))

(defun openvaala-test-pick (prompt collection &rest _)
  "A completion UI that records what it offers and picks \"Ask openvaala\"."
  (push (list prompt (all-completions "" collection)) openvaala-test-menus)
  "Ask openvaala")

(defun openvaala-test-run ()
  (let (results)
    (find-file "app.py")
    (call-interactively #'eglot)
    (openvaala-test-wait "eglot to manage app.py" #'eglot-managed-p)
    (setq openvaala-test-server (eglot-current-server))
    ;; the user's edit, not saved
    (goto-char (point-min))
    (forward-line 1)
    (end-of-line)
    (insert "  # checked by hand")
    (push (cons 'buffer (buffer-string)) results)
    (push (cons 'modified (if (buffer-modified-p) t :json-false)) results)
    ;; M-x eglot-code-actions on the selected line
    (transient-mark-mode 1)
    (beginning-of-line)
    (push-mark (point) t t)
    (end-of-line)
    (let ((completing-read-function #'openvaala-test-pick)
          (last-nonmenu-event ?\r))  ; a key, not a mouse click: eglot asks in the minibuffer
      (call-interactively #'eglot-code-actions))
    (deactivate-mark)
    (openvaala-test-answered 0)
    ;; M-x openvaala-ask
    (call-interactively #'openvaala-ask)  ; its prompt is read, in batch mode, from standard input
    (openvaala-test-answered 1)
    (push (cons 'menus (vconcat (mapcar (lambda (menu) `((prompt . ,(car menu)) (titles . ,(vconcat (cadr menu)))))
                                        (reverse openvaala-test-menus))))
          results)
    (push (cons 'messages (vconcat (openvaala-test-shown))) results)
    (push (cons 'modified_after (if (buffer-modified-p) t :json-false)) results)
    (push (cons 'versions `((emacs . ,emacs-version) (eglot . ,(lm-version (locate-library "eglot.el"))))) results)
    results))

(defun openvaala-test-events ()
  "What eglot exchanged with the server (its events buffer)."
  (if openvaala-test-server
      (with-current-buffer (jsonrpc-events-buffer openvaala-test-server) (buffer-string))
    ""))

(let ((results (condition-case-unless-debug failure
                   (openvaala-test-run)
                 (error `((error . ,(error-message-string failure)))))))
  (push (cons 'events (openvaala-test-events)) results)
  (with-temp-file (getenv "OPENVAALA_TEST_RESULT")
    (insert (json-encode results)))
  (when openvaala-test-server
    (eglot-shutdown openvaala-test-server))
  (kill-emacs 0))
