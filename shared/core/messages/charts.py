"""The memory picture's words, in English and Japanese: its title and alt text (chart.*), and the one line that
stands in for it when there is no picture to show (Monitoring has no data, can't be read, or Slack refused it).
"""

from __future__ import annotations

from typing import Final

from shared.core.messages.formatting import Lang

CHARTS: Final[dict[str, dict[Lang, str]]] = {
    "chart.title.kill": {
        "en": "Memory of {instance} before the kill",
        "ja": "{instance} の強制終了までのメモリ",
    },
    "chart.title.warn": {
        "en": "Memory of {instance} over the last hour",
        "ja": "{instance} の直近1時間のメモリ",
    },
    "chart.alt.kill": {
        "en": "Memory used on {instance} over the hour before the kill: it rose to {peak} ({percent}% of {total}) "
              "at {peak_time}, and the out-of-memory kill came at {kill_time}. Largest processes just before: {who}.",
        "ja": "強制終了までの1時間の {instance} のメモリ使用量: {peak_time} に {peak}（{total} の {percent}%）まで増え、"
              "{kill_time} にメモリ不足で強制終了されました。直前にメモリが最も多かったプロセス: {who}。",
    },
    "chart.alt.warn": {
        "en": "Memory used on {instance} over the last hour: {now} now, highest {peak} ({percent}% of {total}) "
              "at {peak_time}. Largest processes now: {who}.",
        "ja": "直近1時間の {instance} のメモリ使用量: 現在 {now}、最大は {peak_time} の {peak}（{total} の {percent}%）。"
              "今メモリが最も多いプロセス: {who}。",
    },
    "chart.title.disk": {
        "en": "Disk of {instance} over the last hours",
        "ja": "{instance} の直近数時間のディスク",
    },
    "chart.alt.disk": {
        "en": "Disk used on {instance} over the last hours: {now} now, highest {peak} ({percent}% of {total}) "
              "at {peak_time}. Largest folders: {who}.",
        "ja": "直近数時間の {instance} のディスク使用量: 現在 {now}、最大は {peak_time} の {peak}（{total} の {percent}%）。"
              "大きいフォルダ: {who}。",
    },
    "chart.title.gpu": {
        "en": "GPU memory of {instance} over the last hour",
        "ja": "{instance} の直近1時間の GPU メモリ",
    },
    "chart.alt.gpu": {
        "en": "GPU memory used on {instance} over the last hour: {now} now, highest {peak} ({percent}% of {total}) "
              "at {peak_time}. Holding it: {who}.",
        "ja": "直近1時間の {instance} の GPU メモリ使用量: 現在 {now}、最大は {peak_time} の {peak}（{total} の "
              "{percent}%）。保持しているプロセス: {who}。",
    },
    "chart.gpu.no_data": {
        "en": ":chart_with_upwards_trend: No GPU memory curve for *{instance}*: Cloud Monitoring has no data for its "
              "GPU in the last hour (the Ops Agent reports it through the NVIDIA driver).",
        "ja": ":chart_with_upwards_trend: *{instance}* の GPU メモリの推移はありません: Cloud Monitoring に直近1時間の"
              "GPU のデータがありません（Ops Agent が NVIDIA ドライバ経由で報告します）。",
    },
    "chart.alt.nobody": {
        "en": "no process data",
        "ja": "プロセスのデータなし",
    },
    "chart.no_data": {
        "en": ":chart_with_upwards_trend: No memory curve for *{instance}*: Cloud Monitoring has no memory data "
              "for its VM in that hour (the Ops Agent is not on it, or the VM is new).",
        "ja": ":chart_with_upwards_trend: *{instance}* のメモリの推移はありません: Cloud Monitoring にその1時間の"
              "メモリのデータがありません（Ops Agent が入っていないか、新しい VM です）。",
    },
    "chart.disk.no_data": {
        "en": ":chart_with_upwards_trend: No disk curve for *{instance}*: Cloud Monitoring has no data for that disk "
              "in the last hours, or the notebook's guard has not reported the disk's size.",
        "ja": ":chart_with_upwards_trend: *{instance}* のディスクの推移はありません: Cloud Monitoring にそのディスクの"
              "直近のデータがないか、ノートブックのガードがディスクの容量を報告していません。",
    },
    "chart.unreadable": {
        "en": ":chart_with_upwards_trend: No memory curve for *{instance}*: Cloud Monitoring could not be read "
              "({error}).",
        "ja": ":chart_with_upwards_trend: *{instance}* のメモリの推移はありません: Cloud Monitoring を読めませんでした"
              "（{error}）。",
    },
    "chart.not_uploaded": {
        "en": ":chart_with_upwards_trend: No memory curve for *{instance}*: Slack did not take the picture "
              "({error}).",
        "ja": ":chart_with_upwards_trend: *{instance}* のメモリの推移はありません: Slack が画像を受け付けませんでした"
              "（{error}）。",
    },
}
