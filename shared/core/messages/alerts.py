"""The organizers' alert about one instance, in English and Japanese: its title, its fields, what the bot did
(one outcome per verdict) and why (the reason a reset was judged needed).

The words only; blocks.py lays them out and the worker picks the outcome.
"""

from __future__ import annotations

from typing import Final

from shared.core.messages.formatting import Lang

ALERTS: Final[dict[str, dict[Lang, str]]] = {
    # ---- the OOM alert in the organizers' channel --------------------------------------------
    "alert.title": {
        "en": ":rotating_light: {instance} ran out of memory",
        "ja": ":rotating_light: {instance} がメモリ不足になりました",
    },
    "alert.repeats": {
        "en": ":repeat: Seen {count} times since {since} (grouped: one message per {window})",
        "ja": ":repeat: {since} 以降 {count} 回発生 (まとめて表示: {window} ごとに 1 件)",
    },
    "alert.title.unresolved": {
        "en": ":rotating_light: An OOM kill I could not tie to an instance",
        "ja": ":rotating_light: インスタンスを特定できない OOM Kill",
    },
    "alert.title.sweep": {
        "en": ":rotating_light: {instance} is down (found by the health sweep, no out-of-memory kill)",
        "ja": ":rotating_light: {instance} が停止しています (ヘルスチェックで検出、メモリ不足ではありません)",
    },
    "alert.title.manual": {
        "en": ":arrows_counterclockwise: {instance}: restart requested by {requester}",
        "ja": ":arrows_counterclockwise: {instance}: {requester} さんが再起動を依頼しました",
    },
    "alert.title.action": {
        "en": ":wrench: {instance}: {action} requested by {requester}",
        "ja": ":wrench: {instance}: {requester} さんが「{action}」を依頼しました",
    },
    # {action} of alert.title.action: what a button asked for
    "action.pause": {"en": "pause restarts", "ja": "再起動の一時停止"},
    "action.resume": {"en": "resume restarts", "ja": "再起動の再開"},
    "action.stop": {"en": "stop", "ja": "停止"},
    "action.resize": {"en": "resize", "ja": "マシンタイプ変更"},
    "field.instance": {"en": "Instance", "ja": "インスタンス"},
    "field.owner": {"en": "Owner", "ja": "所有者"},
    "field.zone": {"en": "Zone", "ja": "ゾーン"},
    "field.process": {"en": "Killed process", "ja": "強制終了されたプロセス"},
    "field.killed_at": {"en": "Killed at", "ja": "発生時刻"},
    "field.restarts": {"en": "Automatic restarts", "ja": "自動再起動"},
    "field.reason": {"en": "Why", "ja": "理由"},
    "owner.unknown": {"en": "unknown (no proxy-user-mail)", "ja": "不明 (proxy-user-mail なし)"},
    "process.with_memory": {
        "en": "{process} (pid {pid}) used {rss}",
        "ja": "{process} (pid {pid}) が {rss} を使用",
    },
    "process.with_memory_of": {
        "en": "{process} (pid {pid}) used {rss} of {total}",
        "ja": "{process} (pid {pid}) が {total} 中 {rss} を使用",
    },
    "process.plain": {"en": "{process} (pid {pid})", "ja": "{process} (pid {pid})"},
    # The count is the current run (policy.crashloop_count), which is what the pause counts: not every restart
    # in the window (three an hour apart are three runs of one).
    "restarts.count": {
        "en": "{count} in a row (pause at {limit}; {gap} without one starts the count over)",
        "ja": "連続 {count} 回 (上限 {limit} 回。{gap} 再起動がなければ数え直し)",
    },
    "logs.link": {"en": "<{url}|Logs in the Cloud console>", "ja": "<{url}|Cloud コンソールのログ>"},
    "raw.entry": {"en": "Raw entry:\n```{raw}```", "ja": "元のログエントリ:\n```{raw}```"},
    # ---- outcomes (one per verdict, with the reason beside it) -------------------------------
    "outcome.restarting": {"en": ":hourglass_flowing_sand: Restarting…", "ja": ":hourglass_flowing_sand: 再起動中…"},
    "outcome.restarted": {
        "en": ":white_check_mark: Restarted in {seconds} s",
        "ja": ":white_check_mark: {seconds} 秒で再起動しました",
    },
    "outcome.restart_failed": {
        "en": ":x: Restart failed: {error}",
        "ja": ":x: 再起動に失敗しました: {error}",
    },
    "outcome.restart_unconfirmed": {
        "en": ":warning: Reset sent, but I could not confirm it finished within {seconds} s: check the instance",
        "ja": ":warning: リセットは送信しましたが {seconds} 秒以内に完了を確認できませんでした。インスタンスを確認してください",
    },
    "outcome.notify_only": {
        "en": ":information_source: Not restarted: JupyterLab survived; only the kernel died",
        "ja": ":information_source: 再起動せず: JupyterLab は動作中で、カーネルのみ終了しました",
    },
    "outcome.not_active": {
        "en": ":pause_button: Not restarted: the instance is {state}",
        "ja": ":pause_button: 再起動せず: インスタンスは {state} 状態です",
    },
    "outcome.opted_out": {
        "en": ":no_entry_sign: Not restarted: automatic restarts are off for this instance (label medic-auto=off)",
        "ja": ":no_entry_sign: 再起動せず: このインスタンスは自動再起動が無効です (ラベル medic-auto=off)",
    },
    # The labels say that restarts are paused, not who paused them (the bot after a crash loop, or an organizer).
    "outcome.paused": {
        "en": ":no_entry_sign: Not restarted: restarts of this instance are paused (after a crash loop, or by an "
        "organizer); a person must look",
        "ja": ":no_entry_sign: 再起動せず: このインスタンスの再起動は一時停止中です (クラッシュループ後、または運営による停止)。"
        "担当者の確認が必要です",
    },
    "outcome.crash_loop": {
        "en": ":octagonal_sign: Crash loop: {count} automatic restarts in {window}. "
        "Restarts of this instance are paused, the owner's included; it needs a person",
        "ja": ":octagonal_sign: クラッシュループ: {window} で {count} 回自動再起動しました。"
        "このインスタンスの再起動 (所有者によるものを含む) を一時停止しました。担当者の対応が必要です",
    },
    # A crash loop whose pause could not be written (medic-auto is a label): nothing is paused, so say so.
    "outcome.crash_loop_unpaused": {
        "en": ":octagonal_sign: Crash loop: {count} automatic restarts in {window}. Not restarted, and not paused: "
        "I could not record a pause on this instance, so its owner can still restart it. {why}. It needs a person",
        "ja": ":octagonal_sign: クラッシュループ: {window} で {count} 回自動再起動しました。再起動はしていませんが、"
        "一時停止もできていません: このインスタンスに一時停止を記録できないため、所有者はまだ再起動できます。{why}。"
        "担当者の対応が必要です",
    },
    "outcome.dry_run": {
        "en": ":test_tube: Dry run: I would have restarted it ({reason})",
        "ja": ":test_tube: ドライラン: 通常なら再起動していました ({reason})",
    },
    "outcome.too_old": {
        "en": ":warning: Not restarted: this event is {age} old, older than the {limit} I act on. Check the instance",
        "ja": ":warning: 再起動せず: このイベントは {age} 前のもので、対応上限 {limit} を超えています。"
        "インスタンスを確認してください",
    },
    "outcome.wait_ended": {
        "en": ":warning: Not restarted: I was still waiting ({reason}) after {count} rounds, longer than any wait "
        "should take. Check the instance, and restart it if it is down",
        "ja": ":warning: 再起動せず: {count} 回確認しても待機 ({reason}) が終わらず、想定より長くかかっています。"
        "インスタンスを確認し、停止していれば再起動してください",
    },
    "outcome.too_old_request": {
        "en": ":warning: Not done: this request is {age} old, older than the {limit} I act on. "
        "Press the button again if it is still wanted",
        "ja": ":warning: 実行せず: この依頼は {age} 前のもので、対応上限 {limit} を超えています。"
        "まだ必要であればもう一度ボタンを押してください",
    },
    "outcome.api_error": {
        "en": ":x: Not restarted: the Workbench API said {error}",
        "ja": ":x: 再起動せず: Workbench API のエラー: {error}",
    },
    # A button other than Restart: its alert is titled by the button, and says what was not done.
    "outcome.api_error.stop": {
        "en": ":x: Not stopped: the Workbench API said {error}",
        "ja": ":x: 停止せず: Workbench API のエラー: {error}",
    },
    "outcome.api_error.pause": {
        "en": ":x: Restarts not paused: the Workbench API said {error}",
        "ja": ":x: 再起動を一時停止せず: Workbench API のエラー: {error}",
    },
    "outcome.api_error.resume": {
        "en": ":x: Restarts not resumed: the Workbench API said {error}",
        "ja": ":x: 再起動を再開せず: Workbench API のエラー: {error}",
    },
    "outcome.labels_full": {
        "en": "`{instance}` carries {count} labels; notebook-medic needs {needed} free of GCP's 64 for its own: "
        "remove at least {excess}, or it can't keep count of restarts on this instance",
        "ja": "`{instance}` にはラベルが {count} 個あります。notebook-medic は GCP の上限 64 個のうち {needed} 個を"
        "自分用に必要とします。{excess} 個以上削除しないと、このインスタンスの再起動を記録できません",
    },
    "outcome.not_recorded": {
        "en": ":label: Not restarted: I can't record an automatic restart on this instance, and one I can't record "
        "could repeat without end. {labels}. If JupyterLab is down, restart it with the button",
        "ja": ":label: 再起動せず: このインスタンスには自動再起動を記録できず、記録できない自動再起動は"
        "際限なく繰り返すおそれがあります。{labels}。JupyterLab が停止していればボタンで再起動してください",
    },
    "outcome.unverified": {
        "en": ":grey_question: Not restarted: I could not check which VM wrote this kill line ({reason}), so only "
        "the instance's own report that JupyterLab is down would restart it, and it has not said so",
        "ja": ":grey_question: 再起動せず: この OOM Kill の行を書いた VM を確認できませんでした ({reason})。"
        "インスタンス自身が JupyterLab の停止を報告した場合にのみ再起動しますが、その報告はありません",
    },
    "alert.writer": {
        "en": ":pencil2: Written by the VM of {writer}",
        "ja": ":pencil2: 書き込んだ VM: {writer}",
    },
    "alert.writer.unknown": {
        "en": ":pencil2: Written by a VM that gave an id no VM in the zone has (or none): the writer can't be named",
        "ja": ":pencil2: 書き込んだ VM は、ゾーンのどの VM にもない ID を名乗りました (または ID なし)。特定できません",
    },
    "outcome.unresolved": {
        "en": ":mag: Not restarted: {reason}. Please find the instance and restart it by hand if needed",
        "ja": ":mag: 再起動せず: {reason}。該当インスタンスを確認し、必要なら手動で再起動してください",
    },
    "outcome.coalesced": {
        "en": ":link: Already restarted at {time}; no second restart",
        "ja": ":link: {time} に再起動済みのため、重ねて再起動しません",
    },
    "outcome.coalesced_inflight": {
        "en": ":link: Restarting since {time}; no second restart",
        "ja": ":link: {time} から再起動中のため、重ねて再起動しません",
    },
    # A restart whose end was not seen (the reset still running when the worker's time ran out).
    "outcome.coalesced_unconfirmed": {
        "en": ":link: A restart was sent at {time} and not yet seen to finish; no second restart. If the notebook "
        "isn't back in a few minutes, ask again",
        "ja": ":link: {time} に再起動を送信しましたが、まだ完了を確認できていないため、重ねて再起動しません。"
        "数分たっても戻らなければ、もう一度依頼してください",
    },
    "outcome.paused_by": {
        "en": ":pause_button: Restarts paused by {who} at {time}: no automatic ones, none by the owner "
        "(organizers still can)",
        "ja": ":pause_button: {time} に {who} さんが再起動を一時停止しました: 自動再起動も所有者による再起動も行いません"
        " (運営は再起動できます)",
    },
    "outcome.resumed_by": {
        "en": ":arrow_forward: Restarts resumed by {who} at {time}",
        "ja": ":arrow_forward: {time} に {who} さんが再起動を再開しました",
    },
    "outcome.started_by": {
        "en": ":arrow_forward: Started again by {who} at {time}",
        "ja": ":arrow_forward: {time} に {who} さんが再び起動しました",
    },
    "outcome.stopped_by": {
        "en": ":stop_button: Instance stopped by {who} at {time}",
        "ja": ":stop_button: {time} に {who} さんがインスタンスを停止しました",
    },
    "outcome.stop_unconfirmed": {
        "en": ":warning: Stop sent by {who} at {time}, but I could not confirm within {seconds} s that the instance "
        "stopped: check the instance",
        "ja": ":warning: {time} に {who} さんの依頼で停止を送信しましたが、{seconds} 秒以内に停止を確認できませんでした。"
        "インスタンスを確認してください",
    },
    "outcome.stop_failed": {"en": ":x: Stop failed: {error}", "ja": ":x: 停止に失敗しました: {error}"},
    "outcome.busy_retried": {
        "en": ":repeat: The Workbench API first answered that the instance was busy (409 ABORTED, \"unable to queue the operation\"): asked again {count}×, then it took the reset",
        "ja": ":repeat: Workbench API が最初はインスタンスが処理中と応答しました (409 ABORTED「unable to queue the operation」)。{count} 回再試行し、再起動を受け付けました",
    },
    "outcome.restarted_by": {
        "en": ":white_check_mark: Restarted by {who} in {seconds} s",
        "ja": ":white_check_mark: {who} さんの依頼で {seconds} 秒で再起動しました",
    },
    # ---- reasons for a reset, shown beside the outcome ---------------------------------------
    "reason.jupyter-down": {"en": "JupyterLab is down", "ja": "JupyterLab が停止しています"},
    "reason.unhealthy": {"en": "the instance reports UNHEALTHY", "ja": "インスタンスが UNHEALTHY です"},
    "reason.no-agent": {"en": "no health agent is reporting", "ja": "ヘルスエージェントが応答していません"},
    "reason.silent": {
        "en": "the notebook's VM stopped answering: no health report for {silence}",
        "ja": "ノートブックの VM が応答していません: {silence} 以上ヘルス情報が届いていません",
    },
    "reason.no-fresh-health": {
        "en": "no health report arrived within {grace} of the kill",
        "ja": "Kill 後 {grace} 以内にヘルス情報が届きませんでした",
    },
    "reason.no-jupyter-health": {
        "en": "no health report within {grace} of the kill said whether JupyterLab is up",
        "ja": "Kill 後 {grace} 以内のヘルス情報に JupyterLab の稼働状況が含まれていませんでした",
    },
    "reason.policy-always": {"en": "RESTART_POLICY=always", "ja": "RESTART_POLICY=always"},
    "reason.requested": {"en": "requested by {who}", "ja": "{who} さんの依頼"},
}
